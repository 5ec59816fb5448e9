package daemon

import (
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/canonical"
)

// BenchmarkIngestHTTPMaxRecord: one signed CHAP envelope of about the default record limit
// (a task.update whose draft is a string of DefaultMaxSize less 1 KiB) per request, durable
// before its 201. peak-MiB is the most heap in use during a request (sampled every
// millisecond) above the heap in use just before it, after a collection, with the envelope
// built: client and server together, the client holding its body. B/op is what a request
// allocates, client and server.
func BenchmarkIngestHTTPMaxRecord(b *testing.B) {
	_, base := benchDaemon(b, time.Second)
	c := chapscenario.NewCast()
	bl := chapscenario.NewBuilder("wsp_max", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, p := range []*chapscenario.Participant{c.Coordinator, c.Alice, c.Bob, c.Bot} {
		if err := bl.Join(p, c.Coordinator.URI); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{}
	url := base + "/v1/chains/wsp_max/entries"
	for _, r := range bl.Records() {
		mustPost(b, client, url, "application/json", r)
	}
	draft := strings.Repeat("The carrier confirms the parcel was scanned at the depot. ", canonical.DefaultMaxSize/58+1)[:canonical.DefaultMaxSize-1024]
	var peak atomic.Uint64 // during the request in flight; 0 between requests
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if p := peak.Load(); p != 0 {
					runtime.ReadMemStats(&m)
					if m.HeapInuse > p {
						peak.CompareAndSwap(p, m.HeapInuse)
					}
				}
			}
		}
	}()
	b.SetBytes(int64(len(draft)))
	b.ReportAllocs()
	b.ResetTimer()
	var most uint64
	var ms runtime.MemStats
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		rec, err := bl.Envelope(c.Bot, c.Coordinator.URI, "task.update", map[string]any{"task_id": "tsk_1", "draft": draft})
		if err != nil || len(rec) > canonical.DefaultMaxSize {
			b.Fatalf("record of %d bytes: %v", len(rec), err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapInuse
		peak.Store(before)
		b.StartTimer()
		mustPost(b, client, url, "application/json", rec)
		b.StopTimer()
		most = max(most, peak.Swap(0)-before)
		b.StartTimer()
	}
	b.StopTimer()
	close(stop)
	<-done
	listChains(b, base)
	b.ReportMetric(float64(most)/(1<<20), "peak-MiB")
}
