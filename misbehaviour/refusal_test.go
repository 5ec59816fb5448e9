package misbehaviour_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
)

// TestNewRefusalKeepsLargeProofs checks that a witness's answer is parsed whole as a proof
// before the text a refusal stores is cut: a proof whose notes carry ML-DSA-44 signatures and
// references is over the stored text's old limit (64 KiB), and one padded with whitespace is
// over MaxResponse itself.
func TestNewRefusalKeepsLargeProofs(t *testing.T) {
	l := forkedLog(t)
	skey, _, err := log.GenerateMLDSAKey("witness.example/pq")
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := log.NewMLDSASigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, l.checkpoint(t, "a", 7, w), l.checkpoint(t, "b", 12, w), l.proof(t, "b", 7, 12))
	for size := uint64(1); len(p.References) < misbehaviour.MaxReferences; size++ {
		p.AddReference(l.checkpoint(t, "a", 1+size%12, w))
	}
	large := marshal(t, p)
	padded := append(bytes.Repeat([]byte(" "), misbehaviour.MaxResponse), large...)
	if len(large) <= 64<<10 {
		t.Fatalf("the proof is %d bytes, not over 64 KiB: the test shows nothing", len(large))
	}
	at := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		response []byte
	}{
		{"a proof with ML-DSA-44 signatures and references", large},
		{"a proof over MaxResponse", padded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := misbehaviour.NewRefusal("w1.example", "http://127.0.0.1:1/add-checkpoint", 409, []byte("old 7\n\n"), tc.response, at)
			if r.Proof == nil || !reflect.DeepEqual(r.Proof, p) {
				t.Fatalf("the refusal of a %d-byte answer keeps no proof, or another", len(tc.response))
			}
			want := tc.response[:min(len(tc.response), misbehaviour.MaxResponse)]
			if r.Response != string(want) {
				t.Errorf("stored response of %d bytes, want the first %d", len(r.Response), len(want))
			}
			if res := misbehaviour.Check(r.Proof, misbehaviour.Keys{LogKeys: []string{l.pq}}); !res.Proven || res.References != misbehaviour.MaxReferences {
				t.Errorf("proven %v (%s), %d references verified", res.Proven, res.Reason, res.References)
			}
		})
	}
}
