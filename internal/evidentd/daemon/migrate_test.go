package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/internal/evidentd/store/legacy"
)

// legacyFixture is a data directory the earlier release's real binaries wrote
// (store/legacy/testdata/README.md).
const legacyFixture = "../store/legacy/testdata/v8"

// copyLegacy copies the fixture into a new data directory.
func copyLegacy(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(data, os.DirFS(legacyFixture)); err != nil {
		t.Fatal(err)
	}
	return data
}

// migratedSizes returns the chains' sizes in the data directory's embedded store.
func migratedSizes(t *testing.T, data string) map[string]uint64 {
	t.Helper()
	st, err := openEmbedded(context.Background(), data, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]uint64{}
	ids, err := st.Chains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		c, err := st.LoadChain(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = c.Size
	}
	return out
}

// TestMigrateResumes: a migration cut short (its half-written copy left behind) is made
// again from the old files at the next start; one cut after the copy was renamed into
// place only moves the old files aside; and a second start changes nothing.
func TestMigrateResumes(t *testing.T) {
	want := map[string]uint64{"wsp_chapref_deep": 13, "wsp_chapref_small": 6, "wsp_support_triage": 10}
	check := func(t *testing.T, got map[string]uint64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("chains %v, want %v", got, want)
		}
		for id, n := range want {
			if got[id] != n {
				t.Fatalf("chains %v, want %v", got, want)
			}
		}
	}
	t.Run("half-written copy", func(t *testing.T) {
		data := copyLegacy(t)
		junk := filepath.Join(data, embedded.Dir+".migrating")
		if err := os.MkdirAll(junk, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(junk, "000001.log"), []byte("torn"), 0o600); err != nil {
			t.Fatal(err)
		}
		check(t, migratedSizes(t, data))
		if _, err := os.Stat(junk); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the half-written copy is still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(data, LegacyDir, legacy.DBFile)); err != nil {
			t.Fatalf("the old database is not kept: %v", err)
		}
		check(t, migratedSizes(t, data)) // the second start: nothing to migrate
	})
	t.Run("renamed, old files not yet moved", func(t *testing.T) {
		data := copyLegacy(t)
		check(t, migratedSizes(t, data))
		// Put the old files back, as if the move had not happened.
		for _, f := range []string{legacy.DBFile, legacy.RecordsFile, legacy.JournalDir} {
			if err := os.Rename(filepath.Join(data, LegacyDir, f), filepath.Join(data, f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.RemoveAll(filepath.Join(data, LegacyDir)); err != nil {
			t.Fatal(err)
		}
		check(t, migratedSizes(t, data))
		if _, err := os.Stat(filepath.Join(data, legacy.DBFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the old database was not moved aside: %v", err)
		}
	})
	t.Run("unreadable old store", func(t *testing.T) {
		data := copyLegacy(t)
		// Cut the record file: the database names bytes it no longer holds.
		recs := filepath.Join(data, legacy.RecordsFile)
		if err := os.Truncate(recs, 64); err != nil {
			t.Fatal(err)
		}
		_, err := openEmbedded(context.Background(), data, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if !errors.Is(err, legacy.ErrCorrupt) {
			t.Fatalf("migrating a cut record file: %v, want legacy.ErrCorrupt", err)
		}
		for _, p := range []string{embedded.Dir, embedded.Dir + ".migrating", LegacyDir} {
			if _, err := os.Stat(filepath.Join(data, p)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists after a refused migration", p)
			}
		}
		if _, err := os.Stat(filepath.Join(data, legacy.DBFile)); err != nil {
			t.Fatalf("the old database moved: %v", err)
		}
	})
}
