// Package witness implements a transparency log witness per C2SP tlog-witness
// (https://c2sp.org/tlog-witness): logs submit a signed checkpoint (C2SP tlog-checkpoint,
// signed-note) with a consistency proof from the last checkpoint the witness cosigned, and
// the witness answers with its cosignature (C2SP tlog-cosignature, cosignature/v1, Ed25519
// and optionally ML-DSA-44 through transparency-dev/formats) once it has checked that the
// new tree extends the old one (RFC 6962 §2.1.2 consistency proofs).
//
// What it guarantees: for one origin it never cosigns two checkpoints that are not
// consistent with each other — the check against the held checkpoint and the durable update
// of it happen atomically (a per-origin mutex in the process, an fsynced rename on disk, a
// lock file against a second process), and the cosignature is only returned after the new
// state is on disk, so a crash at any point (kill -9 included) cannot roll the state back.
//
// What it adds beyond the spec: GET /<hex sha256(origin)>/checkpoint serves the latest
// cosigned checkpoint to monitors, and every validly signed checkpoint that contradicts the
// held one (same size with another root, or a consistency proof that does not verify) is
// kept as a proof of misbehaviour (package misbehaviour: the held and the submitted
// checkpoint, and the request's consistency proof), answered as the refusal's body and
// served at GET /<hex sha256(origin)>/forks.
//
// What it does not do: fetch anything from logs (it is purely request-driven), gossip with
// other witnesses, or check checkpoint extension lines (it cosigns them as written, as the
// cosignature/v1 spec allows).
package witness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
)

// Errors of AddCheckpoint, each with the HTTP status tlog-witness prescribes.
var (
	// ErrMalformed: the request body is not an add-checkpoint body (400).
	ErrMalformed = errors.New("witness: malformed add-checkpoint request")
	// ErrUnknownLog: the checkpoint's origin is not a known log (404).
	ErrUnknownLog = errors.New("witness: unknown log origin")
	// ErrNoTrustedSignature: no signature verifies with a key the witness trusts for the origin (403).
	ErrNoTrustedSignature = errors.New("witness: no signature by a trusted log key")
	// ErrOldSizeTooLarge: the old size is above the checkpoint's size (400).
	ErrOldSizeTooLarge = errors.New("witness: old size above the checkpoint size")
	// ErrSameSizeOtherRoot: the checkpoint has the held size but another root — a split view (409, not text/x.tlog.size).
	ErrSameSizeOtherRoot = errors.New("witness: checkpoint of the held size with another root hash")
	// ErrBadProof: the consistency proof does not verify (422).
	ErrBadProof = errors.New("witness: consistency proof does not verify")
)

// ConflictError is returned when the request's old size is not the size of the checkpoint
// the witness holds (409 with Content-Type text/x.tlog.size and the held size as body).
type ConflictError struct{ Size uint64 }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("witness: old size does not match the held checkpoint of size %d", e.Size)
}

// MaxRequestSize bounds an add-checkpoint body (tlogwitness.MaxRequestSize).
const MaxRequestSize = tlogwitness.MaxRequestSize

// Request is a parsed add-checkpoint body.
type Request = tlogwitness.Request

// ParseRequest parses an add-checkpoint body (tlogwitness.ParseRequest); its errors wrap
// ErrMalformed.
func ParseRequest(body []byte) (*Request, error) {
	r, err := tlogwitness.ParseRequest(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return r, nil
}

// Options configure New.
type Options struct {
	// Logs are the known logs.
	Logs []KnownLog
	// Signers make the witness's cosignatures: cosignature/v1 signers from
	// transparency-dev/formats (note.NewSignerForCosignatureV1: Ed25519 or ML-DSA-44).
	// Every signer's name is the witness name.
	Signers []note.Signer
	// Store holds the state.
	Store *Store
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock for proofs of misbehaviour (default time.Now).
	Now func() time.Time
}

// Witness checks and cosigns checkpoints. Its methods are safe for concurrent use.
type Witness struct {
	logs    map[string]*originState
	ids     map[string]string // OriginID → origin
	signers []note.Signer
	store   *Store
	logger  *slog.Logger
	now     func() time.Time
}

type originState struct {
	log KnownLog
	mu  sync.Mutex // serialises check-and-update of this origin
}

// New makes a witness.
func New(o Options) (*Witness, error) {
	if o.Store == nil {
		return nil, errors.New("witness: Options.Store is required")
	}
	if len(o.Signers) == 0 {
		return nil, errors.New("witness: at least one signer is required")
	}
	for _, s := range o.Signers[1:] {
		if s.Name() != o.Signers[0].Name() {
			return nil, fmt.Errorf("witness: signer names differ: %q and %q", o.Signers[0].Name(), s.Name())
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Witness{logs: map[string]*originState{}, ids: map[string]string{}, signers: o.Signers, store: o.Store, logger: o.Logger, now: o.Now}
	for _, l := range o.Logs {
		if len(l.verifiers) == 0 {
			return nil, fmt.Errorf("witness: log %q has no usable key (build KnownLogs with ParseConfig or NewKnownLog)", l.Origin)
		}
		if _, dup := w.logs[l.Origin]; dup {
			return nil, fmt.Errorf("witness: log %q listed twice", l.Origin)
		}
		w.logs[l.Origin] = &originState{log: l}
		w.ids[OriginID(l.Origin)] = l.Origin
	}
	return w, nil
}

// Name returns the witness name (the cosignature key name).
func (w *Witness) Name() string { return w.signers[0].Name() }

// originOf returns the first line of a note.
func originOf(cp []byte) string {
	line, _, _ := bytes.Cut(cp, []byte("\n"))
	return string(line)
}

// AddCheckpoint runs the tlog-witness add-checkpoint checks on a request and, if they
// pass, durably records the checkpoint and returns the cosignature lines. The errors are
// the sentinels above, *ConflictError, and *ForkError for a validly signed checkpoint that
// contradicts the held one (kept as a proof of misbehaviour before the refusal).
func (w *Witness) AddCheckpoint(ctx context.Context, r *Request) ([]byte, error) {
	st, ok := w.logs[originOf(r.Checkpoint)]
	if !ok {
		return nil, fmt.Errorf("%w: %.100q", ErrUnknownLog, originOf(r.Checkpoint))
	}
	n, err := note.Open(r.Checkpoint, note.VerifierList(st.log.verifiers...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		if errors.As(err, &unverified) || errors.As(err, &invalid) {
			return nil, fmt.Errorf("%w: %v", ErrNoTrustedSignature, err)
		}
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrMalformed, err)
	}
	var cp tlog.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(cp.Hash) != 32 {
		return nil, fmt.Errorf("%w: root hash of %d bytes", ErrMalformed, len(cp.Hash))
	}
	if r.OldSize > cp.Size {
		return nil, fmt.Errorf("%w: old %d, checkpoint %d", ErrOldSizeTooLarge, r.OldSize, cp.Size)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Check and update atomically for this origin.
	st.mu.Lock()
	defer st.mu.Unlock()
	heldRaw, err := w.store.Latest(cp.Origin)
	if err != nil {
		return nil, err
	}
	var held *tlog.Checkpoint
	if heldRaw != nil {
		// The held checkpoint was verified before it was stored; parse its body only.
		held = &tlog.Checkpoint{}
		if _, err := held.Unmarshal(heldRaw); err != nil {
			return nil, fmt.Errorf("witness: stored checkpoint of %q is corrupt: %w", cp.Origin, err)
		}
	}
	heldSize := uint64(0)
	if held != nil {
		heldSize = held.Size
	}
	if r.OldSize != heldSize {
		return nil, &ConflictError{Size: heldSize}
	}
	switch {
	case held != nil && cp.Size == held.Size:
		if !bytes.Equal(cp.Hash, held.Hash) {
			return nil, w.refuseFork(fmt.Errorf("%w: size %d", ErrSameSizeOtherRoot, cp.Size), &st.log, heldRaw, n, r)
		}
		if len(r.Proof) != 0 {
			return nil, fmt.Errorf("%w: a proof between equal sizes must be empty", ErrBadProof)
		}
	case held == nil || held.Size == 0:
		if len(r.Proof) != 0 {
			return nil, fmt.Errorf("%w: the proof from size 0 must be empty", ErrBadProof)
		}
	default:
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, held.Size, cp.Size, r.Proof, held.Hash, cp.Hash); err != nil {
			return nil, w.refuseFork(fmt.Errorf("%w: %d → %d: %v", ErrBadProof, held.Size, cp.Size, err), &st.log, heldRaw, n, r)
		}
	}

	sigs, err := w.cosign(n.Text)
	if err != nil {
		return nil, err
	}
	// What monitors are served: the checkpoint with the log's verified signature(s) and ours.
	if err := w.store.SetLatest(cp.Origin, append(logSigned(n), sigs...)); err != nil {
		return nil, err
	}
	return sigs, nil
}

// cosign returns the witness's signature lines over a checkpoint body.
func (w *Witness) cosign(text string) ([]byte, error) {
	signed, err := note.Sign(&note.Note{Text: text}, w.signers...)
	if err != nil {
		return nil, fmt.Errorf("witness: cosigning: %w", err)
	}
	return signed[len(text)+1:], nil
}

// logSigned writes a verified note back with only the signatures that verified (the log's).
func logSigned(n *note.Note) []byte {
	var b bytes.Buffer
	b.WriteString(n.Text)
	b.WriteByte('\n')
	for _, s := range n.Sigs {
		fmt.Fprintf(&b, "— %s %s\n", s.Name, s.Base64)
	}
	return b.Bytes()
}

// Latest returns the latest cosigned checkpoint of a known log by its OriginID, or nil.
func (w *Witness) Latest(id string) (origin string, cp []byte, err error) {
	o, ok := w.ids[id]
	if !ok {
		return "", nil, ErrUnknownLog
	}
	cp, err = w.store.Latest(o)
	return o, cp, err
}

// Forks returns the proofs of misbehaviour kept for a known log by its OriginID, oldest
// first. A kept file that is not a proof is left out and logged (ERROR, naming the file).
func (w *Witness) Forks(id string) ([]*misbehaviour.Proof, error) {
	o, ok := w.ids[id]
	if !ok {
		return nil, ErrUnknownLog
	}
	proofs, unreadable, err := w.store.Proofs(o)
	for _, e := range unreadable {
		w.logger.Error("a kept fork record is not a proof of misbehaviour; not served", "origin", o, "err", e)
	}
	return proofs, err
}

// SplitCosignatures returns the signature lines of a response body, checking their shape
// ("— <name> <base64>\n" each).
func SplitCosignatures(body []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		if !strings.HasPrefix(l, "— ") || len(f) != 3 {
			return nil, fmt.Errorf("witness: %.80q is not a signature line", l)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
