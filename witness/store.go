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

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/misbehaviour"
)

// Store is the witness's persistent state in a directory:
//
//	LOCK                             held (flock) by the one process using the directory
//	<hex sha256(origin)>/checkpoint  the latest cosigned checkpoint of the log, with the log's
//	                                 signature(s) and the witness's cosignature(s)
//	<hex sha256(origin)>/forks/<id>.json  a proof of misbehaviour (misbehaviour.Proof), one
//	                                 file per distinct refused checkpoint (what the log
//	                                 signed) and consistency proof; not-proven-<id>.json
//	                                 when misbehaviour.Check does not call it proven
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
	dir    string
	unlock func() error // releases the LOCK file's flock; nil once closed
}

// ErrLocked is returned by OpenStore when another process holds the state directory.
var ErrLocked = errors.New("witness: state directory is in use by another process")

// OpenStore opens (creating) the state directory and takes its lock.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("witness: state directory: %w", err)
	}
	unlock, err := durable.Lock(filepath.Join(dir, "LOCK"), 0o600)
	if errors.Is(err, durable.ErrLocked) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("witness: state lock: %w", err)
	}
	s := &Store{dir: dir, unlock: unlock}
	s.removeTemps()
	return s, nil
}

// Close releases the lock.
func (s *Store) Close() error {
	if s.unlock == nil {
		return nil
	}
	err := s.unlock()
	s.unlock = nil
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

// Caps of the proof files kept per origin. A proven record needs two histories signed by
// the log's key, so only a misbehaving log makes them, and it must not fill the disk. A
// not-proven record needs only a log-signed checkpoint newer than the held one (public when
// the witness lags) and a made-up consistency proof, so anyone can make many: they have a
// cap of their own and never use up the proven records' room.
const (
	maxProofs    = misbehaviour.MaxList
	maxNotProven = 100
)

// notProvenPrefix starts the file name of a record misbehaviour.Check does not call proven.
const notProvenPrefix = "not-proven-"

// AddProof durably keeps a proof of misbehaviour under <origin id>/forks/ and returns the
// file's name. key identifies the record (what the log signed and the consistency proof):
// the same key is kept once, and a second call returns the name and keeps the first file.
// proven, what misbehaviour.Check says of p, picks the name's prefix and the cap it counts
// against (maxProofs proven, maxNotProven not).
func (s *Store) AddProof(p *misbehaviour.Proof, key []byte, proven bool) (string, error) {
	d, err := s.forksDir(p.Origin)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(key)
	name, max := hex.EncodeToString(h[:16])+".json", maxProofs
	if !proven {
		name, max = notProvenPrefix+name, maxNotProven
	}
	if _, err := os.Stat(filepath.Join(d, name)); err == nil {
		return name, nil
	}
	n, err := countProofs(d, proven)
	if err != nil {
		return "", err
	}
	if n >= max {
		return "", fmt.Errorf("witness: %d %s of %q kept already; not keeping more", n, recordsKind(proven), p.Origin)
	}
	b, err := p.Marshal()
	if err != nil {
		return "", err
	}
	return name, writeFile(d, name, b)
}

// countProofs counts the record files in d that are proven (or not, as proven says). Files
// without the not-proven prefix, those of earlier versions included, count as proven.
func countProofs(d string, proven bool) (int, error) {
	ents, err := os.ReadDir(d)
	if err != nil {
		return 0, fmt.Errorf("witness: reading proofs of misbehaviour: %w", err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") && !durable.IsTemp(e.Name()) && strings.HasPrefix(e.Name(), notProvenPrefix) != proven {
			n++
		}
	}
	return n, nil
}

func recordsKind(proven bool) string {
	if proven {
		return "proofs of misbehaviour"
	}
	return "not-proven refusal records"
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
