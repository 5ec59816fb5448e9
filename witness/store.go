package witness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/misbehaviour"
)

// Store is the witness's persistent state in a directory:
//
//	LOCK                             held (flock) by the one process using the directory
//	<hex sha256(origin)>/checkpoint  the latest cosigned checkpoint of the log, with the log's
//	                                 signature(s) and the witness's cosignature(s)
//	<hex sha256(origin)>/forks/<id>.json  a proof of misbehaviour (misbehaviour.Proof), one
//	                                 file per distinct refused checkpoint
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
		if err == nil && !d.IsDir() && durable.IsTemp(d.Name()) {
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
	if err := mkdir(d); err != nil {
		return err
	}
	return writeFile(d, "checkpoint", cp)
}

// maxProofs bounds the proof files kept per origin (only the log's key can make them, but
// a misbehaving log must not fill the witness's disk).
const maxProofs = misbehaviour.MaxList

// AddProof durably keeps a proof of misbehaviour under <origin id>/forks/ and returns the
// file's name. submitted, the refused checkpoint as sent, names the file: the same
// submitted checkpoint is kept once (a second call returns the name and keeps the first).
func (s *Store) AddProof(p *misbehaviour.Proof, submitted []byte) (string, error) {
	d, err := s.forksDir(p.Origin)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(submitted)
	name := hex.EncodeToString(h[:16]) + ".json"
	if _, err := os.Stat(filepath.Join(d, name)); err == nil {
		return name, nil
	}
	if ents, err := os.ReadDir(d); err == nil && len(ents) >= maxProofs {
		return "", fmt.Errorf("witness: %d proofs of misbehaviour kept for %q already; not keeping more", len(ents), p.Origin)
	}
	b, err := p.Marshal()
	if err != nil {
		return "", err
	}
	return name, writeFile(d, name, b)
}

// forksDir makes (durably) and returns the directory of origin's proofs.
func (s *Store) forksDir(origin string) (string, error) {
	od := filepath.Join(s.dir, OriginID(origin))
	d := filepath.Join(od, "forks")
	if err := mkdir(od); err != nil {
		return "", err
	}
	return d, mkdir(d)
}

// Proofs returns the proofs of misbehaviour kept for origin, oldest first. Records an
// earlier version of the witness kept ({"kind","origin","observed","held","request"}) are
// converted as they are read (misbehaviour.ParseAll), never rewritten. A file that holds no
// proof is left out and reported in unreadable, one error naming each such file; err is
// set only when the directory cannot be read.
func (s *Store) Proofs(origin string) (proofs []*misbehaviour.Proof, unreadable []error, err error) {
	d := filepath.Join(s.dir, OriginID(origin), "forks")
	ents, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return []*misbehaviour.Proof{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("witness: reading proofs of misbehaviour: %w", err)
	}
	proofs = []*misbehaviour.Proof{}
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".json") || durable.IsTemp(de.Name()) {
			continue
		}
		ps, err := readProofs(filepath.Join(d, de.Name()))
		if err != nil {
			unreadable = append(unreadable, err)
			continue
		}
		proofs = append(proofs, ps...)
	}
	sort.SliceStable(proofs, func(i, j int) bool { return proofs[i].Observed < proofs[j].Observed })
	return proofs, unreadable, nil
}

// readProofs reads one kept file: a proof, or a record of an earlier witness version.
func readProofs(path string) ([]*misbehaviour.Proof, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	ps, err := misbehaviour.ParseAll(b)
	if err != nil {
		return nil, fmt.Errorf("witness: %s: %w", path, err)
	}
	return ps, nil
}

// mkdir creates dir durably unless it exists.
func mkdir(dir string) error {
	if err := durable.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}

// writeFile durably replaces dir/name with data.
func writeFile(dir, name string, data []byte) error {
	if err := durable.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}
