package witness

import (
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
)

// ForkError is the error of AddCheckpoint when it refuses a checkpoint, validly signed by
// the log, that contradicts the one the witness holds: the held size with another root
// (it wraps ErrSameSizeOtherRoot, 409) or a consistency proof that does not verify (it
// wraps ErrBadProof, 422). Proof is the proof of misbehaviour the witness keeps and answers
// with; Result is what misbehaviour.Check says of it under the log keys the witness knows.
type ForkError struct {
	err    error
	Proof  *misbehaviour.Proof
	Result misbehaviour.Result
	// File is the name the proof is kept under in the origin's forks directory, "" when it
	// could not be kept.
	File string
}

func (e *ForkError) Error() string { return e.err.Error() }

// Unwrap returns ErrSameSizeOtherRoot or ErrBadProof, with the detail.
func (e *ForkError) Unwrap() error { return e.err }

// refuseFork turns cause, the refusal of checkpoint n (request r) that contradicts the held
// note, into a *ForkError: it builds the proof of misbehaviour, checks it with the log's
// keys, keeps it and logs the refusal. When no proof can be made it logs why and returns cause.
func (w *Witness) refuseFork(cause error, l *KnownLog, held []byte, n *note.Note, r *Request) error {
	submitted := r.Checkpoint
	if len(submitted) > misbehaviour.MaxCheckpoint {
		// More cosignatures than a proof file holds: keep the signatures that verified (the log's).
		submitted = logSigned(n)
	}
	p, err := misbehaviour.New(held, submitted, r.Proof, "witness "+w.Name(), w.now())
	if err != nil {
		w.logger.Error("refused a checkpoint that contradicts the cosigned one; no proof of misbehaviour could be made",
			"origin", l.Origin, "refusal", cause, "err", err)
		return cause
	}
	fe := &ForkError{err: cause, Proof: p, Result: misbehaviour.Check(p, misbehaviour.Keys{LogKeys: checkableKeys(l.VKeys)})}
	if fe.File, err = w.store.AddProof(p, recordKey(n, r), fe.Result.Proven); err != nil {
		w.logger.Error("keeping a proof of misbehaviour", "origin", l.Origin, "err", err)
	}
	w.logFork(fe)
	return fe
}

// recordKey identifies a refused request by what the log signed, the checkpoint with only
// its verified signatures in a fixed order, and by the consistency proof: other signature
// lines, which anyone may add to a note, do not make another record.
func recordKey(n *note.Note, r *Request) []byte {
	c := *n
	c.Sigs = slices.Clone(n.Sigs)
	slices.SortFunc(c.Sigs, func(a, b note.Signature) int { return strings.Compare(a.Base64, b.Base64) })
	return (&Request{OldSize: r.OldSize, Proof: r.Proof, Checkpoint: logSigned(&c)}).Marshal()
}

// logFork writes the WARN line of a refused contradicting checkpoint, saying whether the
// kept file proves that the log signed two histories or only records a faulty proof.
func (w *Witness) logFork(fe *ForkError) {
	var msg string
	switch {
	case fe.Result.Proven:
		msg = "refused a checkpoint that contradicts the cosigned one: the log signed two histories; kept as a proof of misbehaviour"
	case fe.Proof.Kind == misbehaviour.KindInconsistent:
		msg = "refused a checkpoint whose consistency proof does not verify: a faulty proof, not a proof of misbehaviour; kept"
	default:
		msg = "refused a checkpoint that contradicts the cosigned one; kept, but it does not check as a proof of misbehaviour"
	}
	w.logger.Warn(msg, "origin", fe.Proof.Origin, "kind", fe.Proof.Kind, "proven", fe.Result.Proven,
		"file", fe.File, "reason", fe.Result.Reason)
}

// checkableKeys returns the vkeys misbehaviour.Check can verify with (Ed25519 note keys and
// ML-DSA-44 cosignature keys); a known log may also list keys of other algorithms.
func checkableKeys(vkeys []string) []string {
	var out []string
	for _, k := range vkeys {
		if _, err := misbehaviour.Verifiers([]string{k}); err == nil {
			out = append(out, k)
		}
	}
	return out
}
