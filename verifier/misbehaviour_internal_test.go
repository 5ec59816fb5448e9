package verifier

import (
	"crypto/sha256"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
)

// TestProofsWithoutLogKey: building the proofs of a recorded fork when no log key is usable
// (a state Verify does not reach, since forks come from verified checkpoints) neither panics
// nor keeps references it cannot tell the log signed; the proof itself is still built.
func TestProofsWithoutLogKey(t *testing.T) {
	const origin = "log.example/nokey"
	skey, vkey, err := note.GenerateKey(nil, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	wkey, _, err := note.GenerateKey(nil, "witness.example/w")
	if err != nil {
		t.Fatal(err)
	}
	witness, err := note.NewSigner(wkey)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(size uint64, what string) []byte {
		root := sha256.Sum256([]byte(what))
		n, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: origin, Size: size, Hash: root[:]}.Marshal())}, signer, witness)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := sign(5, "one history"), sign(5, "another history")
	v := &verifier{o: Options{Now: func() time.Time { return time.Unix(0, 0) }}}
	v.noteCheckpoint(a, 5, nil, "a")
	v.noteCheckpoint(b, 5, nil, "b")
	v.recordFork(a, b, nil)
	if refs := v.cosignedNotes(); len(refs) != 0 {
		t.Errorf("cosigned notes without a log key: %d", len(refs))
	}
	proofs := v.misbehaviourProofs()
	if len(proofs) != 1 || proofs[0].Kind != misbehaviour.KindSameSize || len(proofs[0].References) != 0 {
		t.Fatalf("proofs %+v", proofs)
	}
	// With the log key, the same notes are cosigned references.
	if v.logKey, err = note.NewVerifier(vkey); err != nil {
		t.Fatal(err)
	}
	if refs := v.cosignedNotes(); len(refs) != 2 {
		t.Errorf("cosigned notes with the log key: %d, want 2", len(refs))
	}
}
