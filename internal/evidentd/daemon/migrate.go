package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/internal/evidentd/store/legacy"
)

// LegacyDir is the folder of the data directory where the files of an earlier release's
// store are kept once migrated.
const LegacyDir = "legacy-store"

// migrateLegacy copies the SQLite store of an earlier release (ledger.db, its record file
// and journal) in data into the embedded store at dir, on the first start after an upgrade.
//
// The copy is made into dir+".migrating" and renamed to dir once whole and checked, so an
// interrupted migration starts again from the old files at the next start. Then the old
// files move into data/legacy-store: they are never deleted.
func migrateLegacy(ctx context.Context, data, dir string, log *slog.Logger) error {
	r, err := legacy.Open(ctx, data)
	if errors.Is(err, legacy.ErrNoLegacy) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("migrating the ledger store of an earlier release: %w", err)
	}
	defer r.Close()
	if _, err := os.Stat(dir); err == nil {
		// The copy was renamed into place, and the old files not yet moved aside.
		return keepLegacy(r, data, log)
	}
	tmp := dir + ".migrating"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("migrating the ledger store: %w", err)
	}
	log.Info("migrating the ledger store of an earlier release into the embedded store", "from", filepath.Join(data, legacy.DBFile), "to", dir)
	start := time.Now()
	st, err := embedded.Open(ctx, tmp, embedded.Options{Logger: log})
	if err != nil {
		return err
	}
	last := time.Now()
	n, err := legacy.Copy(ctx, r, st, func(n legacy.Counts) {
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			log.Info("migrating the ledger store", "chains", n.Chains, "entries", n.Entries)
		}
	})
	if err == nil {
		err = checkMigrated(ctx, r, st)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("migrating the ledger store of an earlier release (nothing changed; the old files are as they were): %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("migrating the ledger store: %w", err)
	}
	if err := durable.SyncDir(data); err != nil {
		return fmt.Errorf("migrating the ledger store: %w", err)
	}
	log.Info("migrated the ledger store", "chains", n.Chains, "entries", n.Entries, "seals", n.Seals, "forks", n.Forks,
		"evidence_heads", n.Heads, "registrations", n.Registrations, "claims", n.Claims, "took", time.Since(start).Round(time.Millisecond))
	return keepLegacy(r, data, log)
}

// checkMigrated checks that every chain of r has, in st, the size and head r gives it.
func checkMigrated(ctx context.Context, r *legacy.Reader, st *embedded.Store) error {
	chains, err := r.Chains(ctx)
	if err != nil {
		return err
	}
	for _, c := range chains {
		got, err := st.LoadChain(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("chain %q after the copy: %w", c.ID, err)
		}
		if got.Size != c.Size || got.Head != c.Head {
			return fmt.Errorf("chain %q: copied at size %d head %s, the old store has %d %s", c.ID, got.Size, got.Head, c.Size, c.Head)
		}
	}
	return nil
}

// keepLegacy moves the old store's files into data/legacy-store.
func keepLegacy(r *legacy.Reader, data string, log *slog.Logger) error {
	files := r.Files()
	r.Close()
	keep := filepath.Join(data, LegacyDir)
	if err := os.MkdirAll(keep, 0o700); err != nil {
		return fmt.Errorf("keeping the old ledger store's files: %w", err)
	}
	for _, f := range files {
		if err := os.Rename(f, filepath.Join(keep, filepath.Base(f))); err != nil {
			return fmt.Errorf("keeping the old ledger store's files: %w", err)
		}
	}
	if err := errors.Join(durable.SyncDir(keep), durable.SyncDir(data)); err != nil {
		return fmt.Errorf("keeping the old ledger store's files: %w", err)
	}
	log.Info("the old ledger store's files are kept; delete them once the migrated service is checked", "dir", keep)
	return nil
}
