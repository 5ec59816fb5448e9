package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/evident-log/evident/misbehaviour"
)

// maxProofNames bounds the suffixes tried for a proof file whose name is taken.
const maxProofNames = 1000

// writeProofs writes each proof of misbehaviour into dir and says on stderr where, and how
// to check it; keyHint names the log key in that advice.
func writeProofs(dir string, proofs []*misbehaviour.Proof, keyHint string, stderr io.Writer) error {
	for _, p := range proofs {
		path, err := writeProof(dir, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "proof of misbehaviour written to %s: check it with evident misbehaviour check %s --log-key %s\n", path, path, keyHint)
	}
	return nil
}

// writeProof writes one proof as misbehaviour-<first 12 hex of sha256(origin)>-<size1>-<size2>.json
// in dir, never over another file: a name that holds other bytes gets a suffix (-2, -3, …),
// one that holds these very bytes is reused.
func writeProof(dir string, p *misbehaviour.Proof) (string, error) {
	data, err := p.Marshal()
	if err != nil {
		return "", err
	}
	id := sha256.Sum256([]byte(p.Origin))
	base := fmt.Sprintf("misbehaviour-%s-%d-%d", hex.EncodeToString(id[:])[:12], noteSize(p.Checkpoints[0]), noteSize(p.Checkpoints[1]))
	for i := 1; i <= maxProofNames; i++ {
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
	return "", fmt.Errorf("%s: %d names taken", filepath.Join(dir, base), maxProofNames)
}

// createOnce creates path holding data; done is false when path exists with other bytes.
func createOnce(path string, data []byte) (done bool, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		old, rerr := os.ReadFile(path)
		return rerr == nil && bytes.Equal(old, data), nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return false, err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return false, err
	}
	return true, nil
}

// noteSize is the tree size of a checkpoint note's body, 0 if it states none.
func noteSize(n string) uint64 {
	_, size, _ := misbehaviour.CheckpointSize([]byte(n))
	return size
}

// logKeyHint names the log key for the advice printed with a proof: the first --log-key
// that is a file, else KEY.
func logKeyHint(values []string) string {
	for _, v := range values {
		if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
			return v
		}
	}
	return "KEY"
}
