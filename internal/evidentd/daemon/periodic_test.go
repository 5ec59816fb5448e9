package daemon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// TestPeriodicSealing: a chain is sealed by itself after SealEvery new entries and, when it
// grows by less, after SealInterval.
func TestPeriodicSealing(t *testing.T) {
	d, err := Open(context.Background(), Config{Data: t.TempDir(), CheckpointInterval: 100 * time.Millisecond,
		SealEvery: 5, SealInterval: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const ws = "wsp_periodic"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	ctx := context.Background()
	if _, err := d.Pipeline().Ingest(ctx, ws, "", recs[:6]); err != nil {
		t.Fatal(err)
	}
	waitSealed(t, d, ws, 6)
	// One more entry: below SealEvery, so the interval seals it.
	if _, err := d.Pipeline().Ingest(ctx, ws, "", recs[6:7]); err != nil {
		t.Fatal(err)
	}
	waitSealed(t, d, ws, 7)
	seals, err := d.store.Seals(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(seals) != 2 || !seals[0].Registered || !seals[1].Registered || seals[0].Size != 6 || seals[1].Size != 7 {
		t.Fatalf("seals: %+v", seals)
	}
}

func waitSealed(t *testing.T, d *Daemon, chain string, size uint64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		seals, err := d.store.Seals(context.Background(), chain)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(seals); n > 0 && seals[n-1].Size == size && seals[n-1].Registered {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("chain %s not sealed at size %d in time", chain, size)
}
