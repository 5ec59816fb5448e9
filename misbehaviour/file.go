package misbehaviour

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tlog "github.com/transparency-dev/formats/log"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/trustfile"
)

// maxFileNames bounds the suffixes WriteFile tries for a proof file whose name is taken.
const maxFileNames = 1000

// Key types a pinned log key may have, as Keys.KeyType names them.
const (
	KeyTypeEd25519 = "ed25519"
	KeyTypeMLDSA44 = "ml-dsa-44"
)

// ParseSome is ParseAll for a reader that needs a proof: an empty list is refused with
// ErrNoProof.
func ParseSome(data []byte) ([]*Proof, error) {
	ps, err := ParseAll(data)
	if err == nil && len(ps) == 0 {
		err = fmt.Errorf("%w: an empty list", ErrNoProof)
	}
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// WriteFile writes p into dir as misbehaviour-<first 12 hex of sha256(origin)>-<size1>-<size2>.json
// and returns the file's path. It never writes over another file: a name that holds other
// bytes gets a suffix (-2, -3, …), one that holds these very bytes is reused.
func WriteFile(dir string, p *Proof) (string, error) {
	data, err := p.Marshal()
	if err != nil {
		return "", err
	}
	id := sha256.Sum256([]byte(p.Origin))
	base := fmt.Sprintf("misbehaviour-%s-%d-%d", hex.EncodeToString(id[:])[:12], noteSize(p.Checkpoints[0]), noteSize(p.Checkpoints[1]))
	for i := 1; i <= maxFileNames; i++ {
		name := base + ".json"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.json", base, i)
		}
		path := filepath.Join(dir, name)
		done, err := createOnce(path, data)
		if err != nil {
			return "", err
		}
		if done {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s: %d names taken", filepath.Join(dir, base), maxFileNames)
}

// createOnce creates path holding data, durably (internal/durable: a crash leaves the whole
// file or none); done is false when path exists with other bytes.
func createOnce(path string, data []byte) (done bool, err error) {
	err = durable.CreateFile(path, data, 0o644)
	if errors.Is(err, fs.ErrExist) {
		old, rerr := os.ReadFile(path)
		return rerr == nil && bytes.Equal(old, data), nil
	}
	return err == nil, err
}

// noteSize is the tree size of a checkpoint note's body, 0 if it states none.
func noteSize(n string) uint64 {
	_, size, _ := CheckpointSize([]byte(n))
	return size
}

// KeyType returns the type of the pinned log key whose name+hash is signer (as Side.Signer
// gives it): KeyTypeMLDSA44 or KeyTypeEd25519.
func (k Keys) KeyType(signer string) string {
	for _, v := range k.LogKeys {
		if strings.HasPrefix(v, signer+"+") && trustfile.IsMLDSA44(v) {
			return KeyTypeMLDSA44
		}
	}
	return KeyTypeEd25519
}

// Claim is what a checkpoint note of a proof says, no signature checked.
type Claim struct {
	Size    uint64
	Root    []byte
	Signers []string // the key names of its signature lines, each once, in order
}

// ClaimError is the reason ClaimOf could not read a checkpoint note; it wraps ErrFormat and
// reads as the checkpoint parser's error.
type ClaimError struct{ Err error }

func (e *ClaimError) Error() string   { return e.Err.Error() }
func (e *ClaimError) Unwrap() []error { return []error{ErrFormat, e.Err} }

// ClaimOf reads what a checkpoint note claims, as it reads: its tree size and root and the
// names of its signature lines. It verifies no signature: for showing a file, never for
// trusting it.
func ClaimOf(n string) (Claim, error) {
	text, sigs, _ := strings.Cut(n, "\n\n")
	var cp tlog.Checkpoint
	if _, err := cp.Unmarshal([]byte(text + "\n")); err != nil {
		return Claim{}, &ClaimError{err}
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(sigs), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "—" && !slices.Contains(names, f[1]) {
			names = append(names, f[1])
		}
	}
	return Claim{Size: cp.Size, Root: cp.Hash, Signers: names}, nil
}

// String describes the claim: tree size, root (base64) and the signature lines' key names.
func (c Claim) String() string {
	return fmt.Sprintf("tree size %d, root %s, signature lines by %s", c.Size, base64.StdEncoding.EncodeToString(c.Root), strings.Join(c.Signers, ", "))
}
