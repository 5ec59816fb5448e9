package ingest

import (
	"bytes"
	"context"
	"testing"

	"github.com/evident-log/evident/ledger"
)

// TestForgedForkIsNotEvidence: a record naming a used predecessor is kept as fork evidence
// only when it is authentic; a tampered or foreign-signed one is refused for what it is and
// leaves nothing in the store.
func TestForgedForkIsNotEvidence(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	carol := newMember("human:carol")
	acc, err := p.Ingest(ctx, "wsp", "", [][]byte{carol.join(t, "wsp")})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		a, err := p.Ingest(ctx, "wsp", "", [][]byte{carol.msg(t, "wsp", &acc[len(acc)-1].Link)})
		if err != nil {
			t.Fatal(err)
		}
		acc = append(acc, a...)
	}
	authentic := carol.msg(t, "wsp", &acc[0].Link)
	tampered := bytes.Replace(authentic, []byte(`"working"`), []byte(`"stopped"`), 1)
	mallory := newMember("human:mallory")
	mallory.uri = "human:carol" // claims to be carol, signs with a key carol never registered
	foreign := mallory.msg(t, "wsp", &acc[0].Link)
	for _, tc := range []struct {
		name string
		rec  []byte
		code ledger.Code
	}{
		{"tampered", tampered, ledger.CodeBadSignature},
		{"foreign key", foreign, ledger.CodeUnknownKey},
		{"authentic", authentic, ledger.CodeFork},
	} {
		_, err := p.Ingest(ctx, "wsp", "", [][]byte{tc.rec})
		refusal(t, err, 0, tc.code)
	}
	forks, err := st.Forks(ctx, "wsp")
	if err != nil || len(forks) != 1 || !bytes.Equal(forks[0].Record, authentic) {
		t.Fatalf("fork evidence %d records (%v); want only the authentic one", len(forks), err)
	}
	checkLinked(t, st, "wsp", 3)
}
