package witness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Store is the witness's persistent state in a directory:
//
//	LOCK                             held (flock) by the one process using the directory
//	<hex sha256(origin)>/checkpoint  the latest cosigned checkpoint of the log, with the log's
//	                                 signature(s) and the witness's cosignature(s)
//	<hex sha256(origin)>/forks/<id>.json  fork evidence (Evidence), one file per distinct
//	                                 submitted checkpoint
//
// Every write goes to a temporary file in the same directory, is fsynced, renamed over the
// target and the directory is fsynced: after a crash (kill -9, power loss) a file holds
// either its old or its new content, never a mix. Why files and not SQLite: the state is
// one small record per log, read and replaced whole; rename is the atomic primitive and
// adds no dependency to a binary that should stay small and auditable.
//
// Store does no locking of its own between goroutines: Witness serialises each origin's
// check-and-update under a per-origin mutex; the LOCK file excludes a second process.
type Store struct {
	dir  string
	lock *os.File
}

// ErrLocked is returned by OpenStore when another process holds the state directory.
var ErrLocked = errors.New("witness: state directory is in use by another process")

// OpenStore opens (creating) the state directory and takes its lock.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("witness: state directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("witness: state lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
	}
	s := &Store{dir: dir, lock: f}
	s.removeTemps()
	return s, nil
}

// Close releases the lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // closing the descriptor drops the flock
	s.lock = nil
	return err
}

// OriginID is the directory name and URL path element of an origin: hex(SHA-256(origin)).
func OriginID(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return hex.EncodeToString(h[:])
}

// removeTemps deletes temporary files a crash left behind.
func (s *Store) removeTemps() {
	filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-") {
			os.Remove(p)
		}
		return nil
	})
}

// Latest returns the stored latest cosigned checkpoint of origin, or nil if there is none.
func (s *Store) Latest(origin string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, OriginID(origin), "checkpoint"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("witness: reading state of %q: %w", origin, err)
	}
	return b, nil
}

// SetLatest durably replaces the latest cosigned checkpoint of origin.
func (s *Store) SetLatest(origin string, cp []byte) error {
	d := filepath.Join(s.dir, OriginID(origin))
	if err := mkdirDurable(s.dir, d); err != nil {
		return err
	}
	return writeAtomic(d, "checkpoint", cp)
}

// Evidence is a validly signed checkpoint the witness refused because it contradicts the
// one it holds: a split view (same size, another root) or a consistency proof that does
// not verify (the log's proof does not show the new tree extends the held one).
type Evidence struct {
	Kind     string `json:"kind"` // EvidenceSameSize or EvidenceBadProof
	Origin   string `json:"origin"`
	Observed string `json:"observed"` // RFC 3339 time the witness saw it
	// Held is the checkpoint the witness had cosigned (with its signatures).
	Held string `json:"held"`
	// Request is the whole add-checkpoint body: old size, proof lines and the submitted checkpoint.
	Request string `json:"request"`
}

// Evidence kinds.
const (
	EvidenceSameSize = "same_size_other_root"
	EvidenceBadProof = "consistency_proof_failed"
)

// maxEvidence bounds the fork evidence files kept per origin (only the log's key can make
// them, but a misbehaving log must not fill the witness's disk).
const maxEvidence = 1000

// AddEvidence durably records fork evidence; submitted identifies it (the same submitted
// checkpoint is kept once).
func (s *Store) AddEvidence(e Evidence, submitted []byte) error {
	d := filepath.Join(s.dir, OriginID(e.Origin), "forks")
	if err := mkdirDurable(s.dir, filepath.Dir(d)); err != nil {
		return err
	}
	if err := mkdirDurable(filepath.Dir(d), d); err != nil {
		return err
	}
	h := sha256.Sum256(submitted)
	name := hex.EncodeToString(h[:16]) + ".json"
	if _, err := os.Stat(filepath.Join(d, name)); err == nil {
		return nil
	}
	if ents, err := os.ReadDir(d); err == nil && len(ents) >= maxEvidence {
		return fmt.Errorf("witness: %d fork evidence files kept for %q already; not keeping more", len(ents), e.Origin)
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(d, name, append(b, '\n'))
}

// Evidence returns the fork evidence kept for origin, oldest first.
func (s *Store) Evidence(origin string) ([]Evidence, error) {
	d := filepath.Join(s.dir, OriginID(origin), "forks")
	ents, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return []Evidence{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("witness: reading fork evidence: %w", err)
	}
	out := []Evidence{}
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".json") || strings.HasPrefix(de.Name(), ".tmp-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, de.Name()))
		if err != nil {
			return nil, fmt.Errorf("witness: reading fork evidence: %w", err)
		}
		var e Evidence
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("witness: fork evidence %s: %w", de.Name(), err)
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Observed < out[j].Observed })
	return out, nil
}

func mkdirDurable(parent, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("witness: %w", err)
	}
	return syncDir(parent)
}

// writeAtomic replaces dir/name with data: temp file, fsync, rename, fsync dir.
func writeAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-")
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("witness: writing %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("witness: fsync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("witness: closing %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("witness: renaming %s: %w", name, err)
	}
	ok = true
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("witness: fsync directory %s: %w", dir, err)
	}
	return nil
}

func nowRFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
