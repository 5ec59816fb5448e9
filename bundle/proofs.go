package bundle

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// LogPQKeyFile holds the log's post-quantum checkpoint verifier key: a C2SP signed-note
// vkey of type 0x06 (ML-DSA-44, cosignature/v1 construction) named like the log origin,
// one line. Only bundles of a log that signs with ML-DSA-44 have it.
const LogPQKeyFile = "trust/log-mldsa.vkey"

// ChainConsistencyFile returns the path of the chain consistency receipt between seal a
// and seal b (b = a+1): an RFC 9942 receipt with one consistency proof (396 {-2}) from the
// chain tree of seal a's size to seal b's, signed by the service over seal b's root.
func ChainConsistencyFile(dir string, a, b uint64) string {
	return fmt.Sprintf("chains/%s/proofs/consistency-%06d-%06d.cose", dir, a, b)
}

// LogConsistencyFile returns the path of the log consistency proof between the checkpoints
// of tree sizes a < b (see ParseConsistencyProof).
func LogConsistencyFile(a, b uint64) string {
	return fmt.Sprintf("log/consistency/%012d-%012d.proof", a, b)
}

// ParseLogConsistencyFile reads the two tree sizes out of a LogConsistencyFile name.
func ParseLogConsistencyFile(name string) (a, b uint64, ok bool) {
	base, ok1 := strings.CutPrefix(name, "log/consistency/")
	base, ok2 := strings.CutSuffix(base, ".proof")
	x, y, ok3 := strings.Cut(base, "-")
	if !ok1 || !ok2 || !ok3 || len(x) != 12 || len(y) != 12 {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(x, 10, 64)
	b, err2 := strconv.ParseUint(y, 10, 64)
	if err1 != nil || err2 != nil || LogConsistencyFile(a, b) != name {
		return 0, 0, false
	}
	return a, b, true
}

// MaxProofHashes is the most hashes an RFC 9162 consistency proof between two trees of
// at most 2^63 leaves can hold.
const MaxProofHashes = 126

// ErrProof is wrapped by every refusal of ParseConsistencyProof.
var ErrProof = errors.New("consistency proof")

// ParseConsistencyProof reads a log consistency proof file: the RFC 9162 §2.1.4
// consistency path as one standard-base64 SHA-256 hash per line, each line ending in
// "\n" (the proof lines of a C2SP tlog-witness add-checkpoint body). An empty file is the
// empty path. The sizes are in the file name.
func ParseConsistencyProof(b []byte) ([][]byte, error) {
	if len(b) == 0 {
		return [][]byte{}, nil
	}
	if b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%w: last line does not end in a newline", ErrProof)
	}
	lines := bytes.Split(b[:len(b)-1], []byte("\n"))
	if len(lines) > MaxProofHashes {
		return nil, fmt.Errorf("%w: %d lines, at most %d", ErrProof, len(lines), MaxProofHashes)
	}
	out := make([][]byte, 0, len(lines))
	for i, l := range lines {
		// Exactly 44 characters: Go's decoder skips '\r' and '\n', which would let one
		// proof be spelled several ways.
		h, err := base64.StdEncoding.Strict().DecodeString(string(l))
		if err != nil || len(h) != 32 || len(l) != base64.StdEncoding.EncodedLen(32) {
			return nil, fmt.Errorf("%w: line %d is not a base64 SHA-256 hash", ErrProof, i+1)
		}
		out = append(out, h)
	}
	return out, nil
}

// MarshalConsistencyProof writes a proof in the format ParseConsistencyProof reads.
func MarshalConsistencyProof(path [][]byte) []byte {
	var b bytes.Buffer
	for _, h := range path {
		b.WriteString(base64.StdEncoding.EncodeToString(h))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
