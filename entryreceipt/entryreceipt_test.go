package entryreceipt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

// vectors is testvectors/entry-receipt: receipts a live, witnessed evidentd made.
var vectors = filepath.Join("..", "testvectors", "entry-receipt")

func loadTrust(t testing.TB) *entryreceipt.Trust {
	t.Helper()
	return loadTrustFile(t, filepath.Join(vectors, "trust.json"))
}

// loadTrustFile pins the keys of the trust file at path.
func loadTrustFile(t testing.TB, path string) *entryreceipt.Trust {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := trustfile.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := entryreceipt.TrustFrom(tf)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func loadVector(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectors, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVectorsVerify(t *testing.T) {
	tr := loadTrust(t)
	for name, want := range map[string]struct {
		seq uint64
		cty string
	}{
		"receipt-seq3.json":          {3, "application/chap+json;version=0.3"},
		"receipt-seq12.json":         {12, "application/chap+json;version=0.3"},
		"receipt-seq4-chap-0.2.json": {4, "application/chap+json;version=0.2"},
	} {
		r, err := entryreceipt.Parse(loadVector(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := entryreceipt.Verify(r, tr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v.Seq != want.seq || v.ContentType != want.cty || v.Chain != "wsp_entry_receipts" || v.Seal.Size != 13 || strings.Join(v.Witnesses, ",") != "w1,w2" ||
			!bytes.Contains(v.Record, []byte(`"jsonrpc"`)) {
			t.Errorf("%s: seq %d cty %s chain %s seal size %d witnesses %v", name, v.Seq, v.ContentType, v.Chain, v.Seal.Size, v.Witnesses)
		}
		// Marshal gives the bytes evidentd served.
		out, err := r.Marshal()
		if err != nil || !bytes.Equal(out, loadVector(t, name)) {
			t.Errorf("%s: Marshal does not reproduce the served bytes (%v)", name, err)
		}
	}
}

// TestVerifyRefuses: each step of the verification catches what it is for.
func TestVerifyRefuses(t *testing.T) {
	tr := loadTrust(t)
	base, err := entryreceipt.Parse(loadVector(t, "receipt-seq3.json"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := entryreceipt.Parse(loadVector(t, "receipt-seq12.json"))
	for _, tc := range []struct {
		name   string
		change func(r *entryreceipt.Receipt)
		want   error
	}{
		{"another chain named", func(r *entryreceipt.Receipt) { r.Chain = "wsp_other" }, entryreceipt.ErrStatement},
		{"another seq named", func(r *entryreceipt.Receipt) { r.Seq = 12 }, entryreceipt.ErrStatement},
		{"another entry's statement", func(r *entryreceipt.Receipt) { r.Statement = other.Statement }, entryreceipt.ErrStatement},
		{"a payload byte changed", func(r *entryreceipt.Receipt) { flipIn(r.Statement, []byte(`"jsonrpc"`)) }, entryreceipt.ErrStatement},
		{"the seal's payload changed", func(r *entryreceipt.Receipt) { flipIn(r.Seal, []byte(`"sealed_at"`)) }, entryreceipt.ErrSeal},
		{"a checkpoint from another log size", func(r *entryreceipt.Receipt) {
			r.Checkpoint = strings.Replace(r.Checkpoint, "\n2\n", "\n3\n", 1)
		}, entryreceipt.ErrCheckpoint},
		{"a witness cosignature dropped", func(r *entryreceipt.Receipt) {
			lines := strings.Split(strings.TrimSuffix(r.Checkpoint, "\n"), "\n")
			r.Checkpoint = strings.Join(lines[:len(lines)-1], "\n") + "\n"
		}, entryreceipt.ErrLogReceipt}, // the log receipt's copy of the checkpoint no longer matches
		{"no checkpoint signature line", func(r *entryreceipt.Receipt) {
			r.Checkpoint, _, _ = strings.Cut(r.Checkpoint, "\n\n")
		}, entryreceipt.ErrCheckpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := *base
			r.Statement = append([]byte(nil), base.Statement...)
			r.Seal = append([]byte(nil), base.Seal...)
			tc.change(&r)
			if _, err := entryreceipt.Verify(&r, tr); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A policy whose quorum a witness that did not cosign must meet refuses it; a trust
	// without witnesses takes it.
	w1, _, _ := strings.Cut(strings.TrimPrefix(tr.Policy.String(), "witness w1 "), "\n")
	for _, tc := range []struct {
		policy string
		want   error
	}{
		{"witness w1 " + w1 + "\nwitness w3 witness.test/w3+6a4ad8be+BF9ilUWXn+3DhEe0yKMB5zrELvAq9/tKsSMBI6ApCaHH\ngroup g 2 w1 w3\nquorum g\n", entryreceipt.ErrWitnessQuorum},
		{"witness w1 " + w1 + "\nquorum w1\n", nil},
	} {
		pol, err := tlogpolicy.Parse([]byte(tc.policy))
		if err != nil {
			t.Fatal(err)
		}
		other := *tr
		other.Policy = pol
		if _, err := entryreceipt.Verify(base, &other); !errors.Is(err, tc.want) {
			t.Errorf("policy %q: got %v, want %v", tc.policy, err, tc.want)
		}
	}
	noWit := *tr
	noWit.Policy = nil
	if v, err := entryreceipt.Verify(base, &noWit); err != nil || len(v.Witnesses) != 0 {
		t.Fatalf("without a policy: %v", err)
	}
}

// flipIn changes the first byte of the first occurrence of marker in b.
func flipIn(b, marker []byte) {
	i := bytes.Index(b, marker)
	if i < 0 {
		panic("marker not found")
	}
	b[i+1] ^= 0x20
}

func TestParse(t *testing.T) {
	good := loadVector(t, "receipt-seq3.json")
	var m map[string]any
	json.Unmarshal(good, &m)
	with := func(k string, v any) []byte {
		c := map[string]any{}
		for kk, vv := range m {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"a later format", with("format", "evident-entry-receipt/v2"), entryreceipt.ErrNewerFormat},
		{"another format", with("format", "evident-bundle/v1"), entryreceipt.ErrMalformed},
		{"an unknown member", with("note", "x"), entryreceipt.ErrMalformed},
		{"no seal", with("seal", nil), entryreceipt.ErrMalformed},
		{"bad base64", with("statement", "!!"), entryreceipt.ErrMalformed},
		{"a duplicate member", append([]byte(`{"chain":"a",`), good[1:]...), entryreceipt.ErrMalformed},
		{"trailing data", append(append([]byte{}, good...), []byte("{}")...), entryreceipt.ErrMalformed},
		{"not JSON", []byte("\xd2\x84"), entryreceipt.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := entryreceipt.Parse(tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzParseVerify: no input makes Parse or Verify panic, and nothing but the served
// receipts (and re-encodings of them that change no signed or checked byte) verifies.
func FuzzParseVerify(f *testing.F) {
	tr := loadTrust(f)
	for _, name := range []string{"receipt-seq3.json", "receipt-seq12.json", "receipt-seq4-chap-0.2.json"} {
		f.Add(loadVector(f, name))
	}
	f.Add([]byte(`{"format":"evident-entry-receipt/v1","chain":"c","seq":0,"statement":"0oQ=","seal":"0oQ=","checkpoint":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := entryreceipt.Parse(b)
		if err != nil {
			return
		}
		v, err := entryreceipt.Verify(r, tr)
		if err != nil {
			return
		}
		if v.Chain != "wsp_entry_receipts" || v.Seal.Size != 13 || len(v.Witnesses) != 2 {
			t.Fatalf("a receipt of something else verified: %+v", v)
		}
	})
}

// TestEveryByteCounts: flipping any one bit of the statement, the seal or the checkpoint of a
// served receipt makes it fail — every byte is signed or checked, none is merely carried.
func TestEveryByteCounts(t *testing.T) {
	tr := loadTrust(t)
	r, err := entryreceipt.Parse(loadVector(t, "receipt-seq3.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, part := range []*[]byte{&r.Statement, &r.Seal} {
		for i := range *part {
			for _, bit := range []byte{0x01, 0x80} {
				(*part)[i] ^= bit
				if _, err := entryreceipt.Verify(r, tr); err == nil {
					t.Errorf("byte %d of %d ^ %#x still verifies", i, len(*part), bit)
				}
				(*part)[i] ^= bit
				n++
			}
		}
	}
	cp := []byte(r.Checkpoint)
	for i := range cp {
		cp[i] ^= 0x01
		r.Checkpoint = string(cp)
		if _, err := entryreceipt.Verify(r, tr); err == nil {
			t.Errorf("checkpoint byte %d (%q) ^ 1 still verifies", i, cp[i]^1)
		}
		cp[i] ^= 0x01
		n++
	}
	r.Checkpoint = string(cp)
	if _, err := entryreceipt.Verify(r, tr); err != nil {
		t.Fatalf("restored: %v", err)
	}
	t.Logf("%d one-bit changes, all refused", n)
}

// BenchmarkVerify verifies one served receipt (two witnesses): seven signature checks, two
// inclusion proofs, the parse.
func BenchmarkVerify(b *testing.B) {
	tr := loadTrust(b)
	raw := loadVector(b, "receipt-seq3.json")
	b.ReportAllocs()
	for b.Loop() {
		r, err := entryreceipt.Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := entryreceipt.Verify(r, tr); err != nil {
			b.Fatal(err)
		}
	}
}
