package bundle

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

func TestConsistencyProofRoundTripAndRejects(t *testing.T) {
	var path [][]byte
	for i := 0; i < 3; i++ {
		h := sha256.Sum256([]byte{byte(i)})
		path = append(path, h[:])
	}
	b := MarshalConsistencyProof(path)
	got, err := ParseConsistencyProof(b)
	if err != nil || len(got) != 3 || !bytes.Equal(got[2], path[2]) {
		t.Fatalf("round trip: %v %x", err, got)
	}
	if got, err := ParseConsistencyProof(nil); err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
	line := strings.Split(string(b), "\n")[0]
	for name, in := range map[string]string{
		"no final newline": line,
		"empty line":       line + "\n\n",
		"CRLF":             line + "\r\n",
		"short hash":       "AAAA\n",
		"not base64":       "not a hash at all, not base64 either!!!!!!!\n",
		"non-canonical":    line[:42] + "B=\n",
		"too many":         strings.Repeat(line+"\n", MaxProofHashes+1),
	} {
		if _, err := ParseConsistencyProof([]byte(in)); !errors.Is(err, ErrProof) {
			t.Errorf("%s: err %v, want ErrProof", name, err)
		}
	}
}

func TestLogConsistencyFileNames(t *testing.T) {
	n := LogConsistencyFile(3, 12)
	if n != "log/consistency/000000000003-000000000012.proof" {
		t.Fatalf("name %s", n)
	}
	if a, b, ok := ParseLogConsistencyFile(n); !ok || a != 3 || b != 12 {
		t.Errorf("parse %d %d %v", a, b, ok)
	}
	for _, bad := range []string{"log/consistency/3-12.proof", "log/consistency/000000000003-000000000012", "log/consistency/000000000003_000000000012.proof", "log/consistency/+00000000003-000000000012.proof"} {
		if _, _, ok := ParseLogConsistencyFile(bad); ok {
			t.Errorf("%s accepted", bad)
		}
	}
}

func FuzzParseConsistencyProof(f *testing.F) {
	h := sha256.Sum256(nil)
	f.Add(MarshalConsistencyProof([][]byte{h[:], h[:]}))
	f.Add([]byte{})
	f.Add([]byte("AAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseConsistencyProof(b)
		if err != nil {
			return
		}
		if !bytes.Equal(MarshalConsistencyProof(p), b) {
			t.Fatalf("accepted input does not round-trip: %q", b)
		}
	})
}
