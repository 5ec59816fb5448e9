package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"

	"github.com/evident-log/evident/ledger"
)

// fakeSealer is NOT a real seal issuer: its "statement" is the seal's canonical JSON, unsigned,
// and its "log" is a counter. It exists only to test the pending → register → recover ordering
// of the pipeline; seals with the real COSE issuer and Tessera log are tested elsewhere.
type fakeSealer struct {
	fail       bool // Register fails (a crash between AddSeal and the log)
	registered [][]byte
}

func (f *fakeSealer) IssueSeal(s ledger.Seal) ([]byte, [32]byte, error) {
	b, err := s.Canonical()
	return b, sha256.Sum256(b), err
}

func (f *fakeSealer) Register(_ context.Context, stmt []byte) (uint64, []byte, []byte, error) {
	if f.fail {
		return 0, nil, nil, errors.New("log unavailable")
	}
	f.registered = append(f.registered, stmt)
	return uint64(len(f.registered) - 1), []byte("cp"), []byte("rcpt"), nil
}

func (f *fakeSealer) Transparent(stmt, rcpt []byte) ([]byte, error) {
	return append(append([]byte{}, stmt...), rcpt...), nil
}

func (f *fakeSealer) SealOf(stmt []byte) (ledger.Seal, error) { return ledger.ParseSeal(stmt) }

func TestSealPendingRecover(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, dir)
	fs := &fakeSealer{fail: true}
	p := newPipeline(t, st, fs)
	m := newMember("human:sealer")
	acc, err := p.Ingest(ctx, "wsp", "", [][]byte{m.join(t, "wsp"), m.msg(t, "wsp", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Seal(ctx, "wsp", false); err == nil {
		t.Fatal("seal registered with the log down")
	}
	// The seal is durable as pending before the log has it, and the chain points at it.
	pending, err := st.PendingSeals(ctx)
	if err != nil || len(pending) != 1 || pending[0].Size != 2 || pending[0].Registered {
		t.Fatalf("pending %+v, %v", pending, err)
	}
	c, _ := st.LoadChain(ctx, "wsp")
	if c.LastSeal != ledger.Link(pending[0].EntryHash).String() || c.SealedSize != 2 {
		t.Fatalf("chain after pending seal %+v", c)
	}
	// A restarted pipeline finishes it.
	fs.fail = false
	p2 := newPipeline(t, st, fs)
	if err := p2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if pending, _ := st.PendingSeals(ctx); len(pending) != 0 || len(fs.registered) != 1 {
		t.Fatalf("after recover: %d pending, %d registered", len(pending), len(fs.registered))
	}
	// Sealing again without new entries returns the same seal; after new entries, a new one chained to it.
	r, err := p2.Seal(ctx, "wsp", false)
	if err != nil || r.N != 0 || r.Seal.Size != 2 || r.Seal.Head != acc[1].Link || len(fs.registered) != 1 {
		t.Fatalf("reseal %+v, %v", r, err)
	}
	if _, err := p2.Ingest(ctx, "wsp", "", [][]byte{m.msg(t, "wsp", nil)}); err != nil {
		t.Fatal(err)
	}
	r2, err := p2.Seal(ctx, "wsp", true)
	if err != nil || r2.N != 1 || r2.Seal.Size != 3 || !r2.Seal.Closed || r2.Seal.PrevSeal != c.LastSeal || r2.LogIndex != 1 {
		t.Fatalf("second seal %+v, %v", r2, err)
	}
	var s ledger.Seal
	if err := json.Unmarshal(r2.Statement, &s); err != nil || s.Root != ledger.RootString(mustRoot(t, p2)) {
		t.Fatalf("sealed root %s: %v", s.Root, err)
	}
	// A closed chain accepts nothing more.
	_, err = p2.Ingest(ctx, "wsp", "", [][]byte{m.msg(t, "wsp", nil)})
	refusal(t, err, 0, ledger.CodeClosed)
}

func mustRoot(t *testing.T, p *Pipeline) [32]byte {
	h, err := p.Head(context.Background(), "wsp")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.ParseLink(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
