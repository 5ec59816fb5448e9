package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
)

// forkFixture is a log that signs with Ed25519 and ML-DSA-44 and signed checkpoints of two
// histories (a, and b sharing a's first 3 leaves), and a witness that cosigned some.
type forkFixture struct {
	origin        string
	ed, pq        string
	signers       []note.Signer
	a, b          *testonly.Tree
	witness       note.Signer
	witnessPolicy string
}

func newForkFixture(t *testing.T) *forkFixture {
	t.Helper()
	f := &forkFixture{origin: "log.example/cli", a: testonly.New(rfc6962.DefaultHasher), b: testonly.New(rfc6962.DefaultHasher)}
	sk, vk, err := note.GenerateKey(rand.Reader, f.origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(sk)
	if err != nil {
		t.Fatal(err)
	}
	psk, _, err := log.GenerateMLDSAKey(f.origin)
	if err != nil {
		t.Fatal(err)
	}
	ps, pvk, err := log.NewMLDSASigner(psk)
	if err != nil {
		t.Fatal(err)
	}
	f.ed, f.pq, f.signers = vk, pvk, []note.Signer{s, ps}
	for i := range 12 {
		f.a.AppendData([]byte(fmt.Sprintf("a/%d", i)))
		if i < 3 {
			f.b.Append(f.a.LeafHash(uint64(i)))
		} else {
			f.b.AppendData([]byte(fmt.Sprintf("b/%d", i)))
		}
	}
	wsk, wvk, err := note.GenerateKey(rand.Reader, "witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	if f.witness, err = fnote.NewSignerForCosignatureV1(wsk); err != nil {
		t.Fatal(err)
	}
	cv, err := fnote.VKeyToCosignatureV1(wvk)
	if err != nil {
		t.Fatal(err)
	}
	f.witnessPolicy = "witness w1 " + cv + "\nquorum w1\n"
	return f
}

// checkpoint signs tree's checkpoint of size with the log's keys and extra signers.
func (f *forkFixture) checkpoint(t *testing.T, tree *testonly.Tree, size uint64, extra ...note.Signer) []byte {
	t.Helper()
	cp := tlog.Checkpoint{Origin: f.origin, Size: size, Hash: tree.HashAt(size)}
	b, err := note.Sign(&note.Note{Text: string(cp.Marshal())}, append(append([]note.Signer{}, f.signers...), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// proofFile writes a proof of two checkpoints with tree's consistency proof between them.
func (f *forkFixture) proofFile(t *testing.T, name string, small, large []byte, tree *testonly.Tree, m, n uint64) string {
	t.Helper()
	var cons [][]byte
	if m != n {
		var err error
		if cons, err = tree.ConsistencyProof(m, n); err != nil {
			t.Fatal(err)
		}
	}
	p, err := misbehaviour.New(small, large, cons, "witness witness.example/w1", time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, name, b)
}

// TestMisbehaviourCheck runs evident misbehaviour check on proofs built from real
// signatures, each carried alone to a fresh directory, against the log's key given every
// way the project's tools write it: exit 1 "PROVEN" only for two histories under the pinned
// key; exit 0 "NOT PROVEN" with the reason for anything else, forged files included; 64 for
// usage errors.
func TestMisbehaviourCheck(t *testing.T) {
	f := newForkFixture(t)
	a7 := f.checkpoint(t, f.a, 7, f.witness)
	b12 := f.checkpoint(t, f.b, 12)
	fork := f.proofFile(t, "fork.json", a7, b12, f.b, 7, 12)
	extension := f.proofFile(t, "extension.json", a7, f.checkpoint(t, f.a, 12), f.a, 7, 12)
	pow2 := f.proofFile(t, "pow2.json", f.checkpoint(t, f.a, 4), b12, f.b, 4, 12)
	same := f.proofFile(t, "same.json", f.checkpoint(t, f.a, 9), f.checkpoint(t, f.b, 9), nil, 9, 9)
	forkBytes, _ := os.ReadFile(fork)
	forged := writeTemp(t, "forged.json", []byte(strings.Replace(string(forkBytes), `\n12\n`, `\n13\n`, 1)))
	sameBytes, _ := os.ReadFile(same)
	extBytes, _ := os.ReadFile(extension)
	forks := writeTemp(t, "forks.json", []byte("["+string(extBytes)+","+string(sameBytes)+"]")) // a witness's GET /<id>/forks
	cons, _ := f.b.ConsistencyProof(7, 12)
	legacy, _ := json.Marshal(map[string]string{"kind": "consistency_proof_failed", "origin": f.origin, "observed": "2026-05-17T09:00:00.5Z",
		"held": string(a7), "request": string((&tlogwitness.Request{OldSize: 7, Proof: cons, Checkpoint: b12}).Marshal())})
	legacyFile := writeTemp(t, "record.json", legacy)
	refusal, _ := misbehaviour.NewRefusal("w1", "http://127.0.0.1:1/add-checkpoint", 409, []byte("old 7\n\n"), []byte("conflict\n"), time.Now()).Marshal()
	bareRefusal := writeTemp(t, "refusal.json", refusal)
	garbage := writeTemp(t, "notes.txt", []byte("this is not a proof\n"))

	edFile := writeTemp(t, "log.vkey", []byte(f.ed+"\n"))
	pqFile := writeTemp(t, "log-mldsa.vkey", []byte(f.pq+"\n"))
	trust := testTrustFile(t, f.origin, []string{f.ed}, []string{f.pq}, f.witnessPolicy)
	_, impostor, _ := note.GenerateKey(rand.Reader, f.origin)
	root := func(tr *testonly.Tree, n uint64) string { return base64.StdEncoding.EncodeToString(tr.HashAt(n)) }

	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		first string   // the first line of standard output
		want  []string // in standard output and error
	}{
		{name: "fork, Ed25519 vkey", args: []string{fork, "--log-key", f.ed}, code: exitBroken, first: "PROVEN: the log signed two histories",
			want: []string{"tree size 7, root " + root(f.a, 7), "tree size 12, root " + root(f.b, 12), "signed by the pinned ed25519 key " + f.origin + "+",
				"implies another root for tree 7", "cosigned by: not checked", "found by (as the file says): witness witness.example/w1 at 2026-05-17T09:00:00Z"}},
		{name: "fork, ML-DSA-44 vkey file", args: []string{fork, "--log-key", pqFile}, code: exitBroken, first: "PROVEN: the log signed two histories",
			want: []string{"signed by the pinned ml-dsa-44 key"}},
		{name: "fork, trust file as --log-key", args: []string{"--log-key", trust, fork}, code: exitBroken, first: "PROVEN"},
		{name: "fork, --trust with a witness policy", args: []string{fork, "--trust", trust}, code: exitBroken, first: "PROVEN",
			want: []string{"cosigned by: w1\n", "cosigned by: none of the pinned policy's witnesses"}},
		{name: "same size", args: []string{same, "--log-key", edFile}, code: exitBroken, first: "PROVEN", want: []string{"kind: same_size_other_root"}},
		{name: "earlier witness record", args: []string{legacyFile, "--log-key", edFile}, code: exitBroken, first: "PROVEN"},
		{name: "a forks list, one of two proven", args: []string{forks, "--log-key", edFile}, code: exitBroken, first: "PROVEN",
			want: []string{"record 2 of 2", "NOT PROVEN: the consistency proof shows tree 12 extends tree 7", "record 1 of 2"}},
		{name: "several files, none proven", args: []string{extension, pow2, "--log-key", edFile}, code: exitVerified, first: "NOT PROVEN: the consistency proof shows tree 12 extends tree 7",
			want: []string{"tree 4 is a power of two", "file: " + pow2}},
		{name: "an impostor's key", args: []string{fork, "--log-key", impostor}, code: exitVerified, first: "NOT PROVEN: checkpoint 1 is not signed by the pinned log key"},
		{name: "a forged file", args: []string{forged, "--log-key", f.ed}, code: exitVerified, first: "NOT PROVEN: checkpoint 2 is not signed by the pinned log key"},
		{name: "not a proof", args: []string{garbage, "--log-key", f.ed}, code: exitVerified, first: "NOT PROVEN: the file holds no proof of misbehaviour"},
		{name: "a refusal without proof", args: []string{bareRefusal, "--log-key", f.ed}, code: exitVerified, first: "NOT PROVEN: the file holds no proof", want: []string{"without sending the checkpoint it holds"}},
		{name: "no key", args: []string{fork}, code: exitUsage, want: []string{"no log key pinned", "usage: evident misbehaviour check FILE..."}},
		{name: "no file", args: []string{"--log-key", f.ed}, code: exitUsage, want: []string{"missing FILE argument"}},
		{name: "a missing file", args: []string{filepath.Join(t.TempDir(), "nothing.json"), "--log-key", f.ed}, code: exitUsage, want: []string{"no such file"}},
		{name: "a bad key", args: []string{fork, "--log-key", "not-a-key"}, code: exitUsage, want: []string{"neither a vkey"}},
		{name: "a bad trust file", args: []string{fork, "--trust", garbage}, code: exitUsage, want: []string{"-trust:"}},
		{name: "an unknown flag", args: []string{fork, "--log-key", f.ed, "--nope"}, code: exitUsage, want: []string{"flag provided but not defined: -nope"}},
		{name: "a bad format", args: []string{fork, "--log-key", f.ed, "--format", "xml"}, code: exitUsage, want: []string{"-format must be text or json"}},
		{name: "help", args: []string{"--help"}, code: 0, first: "Usage: evident misbehaviour <check|show>", want: []string{"-log-key", "-trust"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(append([]string{"misbehaviour", "check"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errs)
			}
			if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, tc.first) {
				t.Errorf("first line %q, want %q", first, tc.first)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, out, errs)
				}
			}
		})
	}
}

// TestMisbehaviourCheckJSON checks the JSON result's members.
func TestMisbehaviourCheckJSON(t *testing.T) {
	f := newForkFixture(t)
	fork := f.proofFile(t, "fork.json", f.checkpoint(t, f.a, 7, f.witness), f.checkpoint(t, f.b, 12), f.b, 7, 12)
	ext := f.proofFile(t, "ext.json", f.checkpoint(t, f.a, 7), f.checkpoint(t, f.a, 12), f.a, 7, 12)
	trust := testTrustFile(t, f.origin, []string{f.ed}, []string{f.pq}, f.witnessPolicy)
	code, out, errs := cli("misbehaviour", "check", "--format", "json", "--trust", trust, ext, fork)
	if code != exitBroken {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	type side struct {
		Size      uint64
		Root      string
		Signer    string
		KeyType   string `json:"key_type"`
		Cosigners []string
	}
	var got struct {
		Proven  bool
		Results []struct {
			File, Reason, Origin, Kind string
			Record                     int
			Proven                     bool
			Checkpoints                []side
			References                 *struct{ Kept, Verified int }
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Proven || len(got.Results) != 2 || got.Results[0].File != ext || got.Results[0].Proven || got.Results[1].File != fork || !got.Results[1].Proven {
		t.Fatalf("results in the files' order, the second proven: %s", out)
	}
	r := got.Results[1]
	if r.Origin != f.origin || r.Kind != misbehaviour.KindInconsistent || r.Record != 1 || r.References == nil || len(r.Checkpoints) != 2 {
		t.Fatalf("result: %+v", r)
	}
	want := []side{
		{Size: 7, Root: base64.StdEncoding.EncodeToString(f.a.HashAt(7)), KeyType: "ed25519", Cosigners: []string{"w1"}},
		{Size: 12, Root: base64.StdEncoding.EncodeToString(f.b.HashAt(12)), KeyType: "ed25519", Cosigners: []string{}},
	}
	for i, w := range want {
		c := r.Checkpoints[i]
		if c.Size != w.Size || c.Root != w.Root || c.KeyType != w.KeyType || fmt.Sprint(c.Cosigners) != fmt.Sprint(w.Cosigners) || !strings.HasPrefix(f.ed, c.Signer+"+") {
			t.Errorf("checkpoint %d: %+v, want %+v signed by %s", i+1, c, w, f.ed)
		}
	}
}

// TestMisbehaviourShow: show says what a file claims, labelled unverified, even under no key.
func TestMisbehaviourShow(t *testing.T) {
	f := newForkFixture(t)
	fork := f.proofFile(t, "fork.json", f.checkpoint(t, f.a, 7), f.checkpoint(t, f.b, 12), f.b, 7, 12)
	code, out, errs := cli("misbehaviour", "show", fork)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, w := range []string{"UNVERIFIED", "claims: consistency_proof_failed", "checkpoint 1: tree size 7", "checkpoint 2: tree size 12", "consistency proof: 5 hashes", "signature lines by " + f.origin} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, exitUsage}, {[]string{"frob"}, exitUsage}, {[]string{"show"}, exitUsage}, {[]string{"help"}, 0}} {
		if code, out, errs := cli(append([]string{"misbehaviour"}, tc.args...)...); code != tc.code {
			t.Errorf("evident misbehaviour %q: exit %d, want %d\n%s%s", tc.args, code, tc.code, out, errs)
		}
	}
}
