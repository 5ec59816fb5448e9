package daemon

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
)

// openEmbedded opens the embedded ledger store of the data directory, first migrating into
// it the store of an earlier release when the directory holds one (migrate.go).
func openEmbedded(ctx context.Context, data string, log *slog.Logger) (*embedded.Store, error) {
	dir := filepath.Join(data, embedded.Dir)
	if err := migrateLegacy(ctx, data, dir, log); err != nil {
		return nil, err
	}
	return embedded.Open(ctx, dir, embedded.Options{Logger: log})
}

// storeMetrics returns the metrics of the embedded store's database, when evidentd runs on
// it.
func storeMetrics(st store.Store) []prometheus.Collector {
	e, ok := st.(*embedded.Store)
	if !ok {
		return nil
	}
	gauge := func(name, help string, v func(embedded.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(e.Stats()) })
	}
	return []prometheus.Collector{
		gauge("evident_store_disk_bytes", "Bytes of the embedded ledger store's files on disk.", func(s embedded.Stats) float64 { return float64(s.DiskBytes) }),
		gauge("evident_store_sstables", "Sorted table files of the embedded ledger store.", func(s embedded.Stats) float64 { return float64(s.Sstables) }),
		gauge("evident_store_memtable_bytes", "Bytes the embedded ledger store holds in memtables.", func(s embedded.Stats) float64 { return float64(s.MemBytes) }),
		gauge("evident_store_cache_bytes", "Bytes the embedded ledger store holds in its block cache.", func(s embedded.Stats) float64 { return float64(s.CacheBytes) }),
	}
}
