package verifier_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
	"github.com/evident-log/evident/witness"
)

// forkFixture is a bundle of a log, the log's genuine checkpoints, a forked tree signed with
// the same log key, and what a real witness served after it was shown both.
type forkFixture struct {
	b                *testbundle.Bundle
	fork             *testonly.Tree
	served4, served6 []byte // the witness's GET /<id>/checkpoint after cosigning sizes 4 and 6
	forks            []byte // the witness's GET /<id>/forks after refusing the fork twice
}

func signTree(t *testing.T, b *testbundle.Bundle, tree *testonly.Tree, size uint64) []byte {
	t.Helper()
	cp, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: b.Origin, Size: size, Hash: tree.HashAt(size)}.Marshal())}, b.NoteSigner)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// newForkFixture builds the bundle (log checkpoints 4, 8 and 12) and runs a witness over
// loopback HTTP: it cosigns the genuine checkpoints 4 and 6, then refuses the fork's
// checkpoint 6 (409, another root) and 10 (422, a consistency proof from 6 that fails).
func newForkFixture(t *testing.T) *forkFixture {
	t.Helper()
	f := &forkFixture{b: testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{4, 8, 12}, CheckpointFiles: true})}
	addLogProofs(t, f.b)
	f.fork = testonly.New(rfc6962.DefaultHasher)
	for i := range 12 {
		f.fork.AppendData(fmt.Appendf(nil, "another history %d", i))
	}
	dir := t.TempDir()
	ws, _, err := witness.LoadOrCreateKey(dir+"/witness.key", "witness.test/w1", witness.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	kl, err := witness.NewKnownLog(f.b.Origin, strings.TrimSpace(string(f.b.Files[bundle.LogKeyFile])))
	if err != nil {
		t.Fatal(err)
	}
	st, err := witness.OpenStore(dir + "/state")
	if err != nil {
		t.Fatal(err)
	}
	w, err := witness.New(witness.Options{Logs: []witness.KnownLog{kl}, Signers: []note.Signer{ws}, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	id := witness.OriginID(f.b.Origin)
	add := func(tree *testonly.Tree, old, size uint64, want int) {
		t.Helper()
		r := &tlogwitness.Request{OldSize: old, Checkpoint: signTree(t, f.b, tree, size)}
		if old > 0 && old < size {
			if r.Proof, err = tree.ConsistencyProof(old, size); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(r.Marshal()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("add-checkpoint old %d size %d: HTTP %d, want %d", old, size, resp.StatusCode, want)
		}
	}
	get := func(path string) []byte {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %v", path, resp.StatusCode, err)
		}
		return b
	}
	add(f.b.LogTree, 0, 4, http.StatusOK)
	f.served4 = get("/" + id + "/checkpoint")
	add(f.b.LogTree, 4, 6, http.StatusOK)
	f.served6 = get("/" + id + "/checkpoint")
	add(f.fork, 6, 6, http.StatusConflict)
	add(f.fork, 6, 10, http.StatusUnprocessableEntity)
	f.forks = get("/" + id + "/forks")
	return f
}

// TestMisbehaviourInputs: every --checkpoint input the project's tools write is read: a
// witness's checkpoint as served, its forks answer (a list of fork records), one fork record,
// a proof file, an evidentd refusal with a proof; a proof file alone shows the fork against
// the bundle (its smaller checkpoint need not be in the bundle). Each fork the verifier finds
// comes back as a proof of misbehaviour that misbehaviour.Check proves under the log key and
// not under another; a forged proof, JSON that is no proof and a refusal without one are not
// evaluated, never broken, and give no proof.
func TestMisbehaviourInputs(t *testing.T) {
	f := newForkFixture(t)
	b := f.b
	trust := testbundle.Trust(t)
	forks, err := misbehaviour.ParseAll(f.forks)
	if err != nil || len(forks) != 2 {
		t.Fatalf("the witness's forks answer: %d proofs, %v\n%s", len(forks), err, f.forks)
	}
	var records []json.RawMessage
	if err := json.Unmarshal(f.forks, &records); err != nil || len(records) != 2 {
		t.Fatalf("the witness's forks answer: %v", err)
	}
	// The witness lists its proofs oldest first, and both came within one second: put the
	// same-size one first (the list and its records in one order).
	if forks[0].Kind != misbehaviour.KindSameSize {
		forks[0], forks[1] = forks[1], forks[0]
		records[0], records[1] = records[1], records[0]
	}
	proofFile := mustMarshal(t, forks[1])
	otherSkey, _, _ := note.GenerateKey(rand.Reader, b.Origin)
	otherSigner, _ := note.NewSigner(otherSkey)
	forgedA, _ := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: b.Origin, Size: 8, Hash: b.LogTree.HashAt(8)}.Marshal())}, otherSigner)
	forgedB, _ := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: b.Origin, Size: 8, Hash: f.fork.HashAt(8)}.Marshal())}, otherSigner)
	forged, err := misbehaviour.New(forgedA, forgedB, nil, "forger", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := b.LogTree.ConsistencyProof(6, 12)
	if err != nil {
		t.Fatal(err)
	}
	honest, err := misbehaviour.New(signTree(t, b, b.LogTree, 6), signTree(t, b, b.LogTree, 12), cons, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	req := (&tlogwitness.Request{OldSize: 6, Checkpoint: signTree(t, b, f.fork, 6)}).Marshal()
	withProof := misbehaviour.NewRefusal("witness.test/w1", "http://witness.test/add-checkpoint", http.StatusConflict, req, mustMarshal(t, forks[0]), time.Now())
	withoutProof := misbehaviour.NewRefusal("witness.test/w1", "http://witness.test/add-checkpoint", http.StatusConflict, req, []byte("conflict\n"), time.Now())

	type want struct {
		name   verifier.CheckName
		status verifier.Status
		code   verifier.Code
	}
	for _, tc := range []struct {
		name    string
		inputs  [][]byte
		verdict verifier.Status
		checks  []want
		kinds   []string // the proofs' kinds, in order
		refs    int      // references on each proof
	}{
		// Verified and cosigned; nothing links tree 6 to the bundle's tree 12.
		{"witness checkpoint as served", [][]byte{f.served6}, verifier.NotEvaluated, []want{{"log.extra_checkpoint", verifier.Verified, ""}, {"log.consistency", verifier.NotEvaluated, verifier.CodeNoConsistency}}, nil, 0},
		{"witness forks answer", [][]byte{f.forks}, verifier.Broken, []want{
			{"log.fork", verifier.Broken, verifier.CodeFork}, {"log.consistency", verifier.Broken, verifier.CodeInconsistent}},
			[]string{misbehaviour.KindSameSize, misbehaviour.KindInconsistent}, 0},
		{"forks answer with another cosigned checkpoint", [][]byte{f.served4, f.forks}, verifier.Broken, []want{{"log.fork", verifier.Broken, verifier.CodeFork}},
			[]string{misbehaviour.KindSameSize, misbehaviour.KindInconsistent}, 1},
		{"one witness fork record", [][]byte{records[1]}, verifier.Broken, []want{{"log.consistency", verifier.Broken, verifier.CodeInconsistent}},
			[]string{misbehaviour.KindInconsistent}, 0},
		{"proof file alone, sizes 6 and 10", [][]byte{proofFile}, verifier.Broken, []want{{"log.consistency", verifier.Broken, verifier.CodeInconsistent}},
			[]string{misbehaviour.KindInconsistent}, 0},
		{"refusal with a proof", [][]byte{mustMarshal(t, withProof)}, verifier.Broken, []want{{"log.fork", verifier.Broken, verifier.CodeFork}},
			[]string{misbehaviour.KindSameSize}, 0},
		{"refusal without a proof", [][]byte{mustMarshal(t, withoutProof)}, verifier.NotEvaluated, []want{{"log.extra_checkpoint", verifier.NotEvaluated, verifier.CodeExtraCheckpoint}}, nil, 0},
		// A witness that refused no checkpoint answers its forks endpoint with an empty list.
		{"forks answer of a witness without forks", [][]byte{[]byte("[]\n")}, verifier.NotEvaluated, []want{{"log.extra_checkpoint", verifier.NotEvaluated, verifier.CodeExtraCheckpoint}}, nil, 0},
		{"JSON that is no proof", [][]byte{[]byte(`{"hello": "world"}`)}, verifier.NotEvaluated, []want{{"log.extra_checkpoint", verifier.NotEvaluated, verifier.CodeExtraCheckpoint}}, nil, 0},
		{"forged proof", [][]byte{mustMarshal(t, forged)}, verifier.NotEvaluated, []want{{"log.extra_checkpoint", verifier.NotEvaluated, verifier.CodeExtraCheckpoint}}, nil, 0},
		{"a consistent pair", [][]byte{mustMarshal(t, honest)}, verifier.Verified, []want{{"log.consistency", verifier.Verified, ""}}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := verifier.Options{Trust: trust, Now: func() time.Time { return testbundle.Base }}
			for i, in := range tc.inputs {
				o.Checkpoints = append(o.Checkpoints, verifier.ExtraCheckpoint{Name: fmt.Sprintf("input%d", i), Data: in})
			}
			rep, err := verifier.Verify(context.Background(), b.Reader(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s\n%s", rep.Verdict, tc.verdict, text(t, rep))
			}
			for _, w := range tc.checks {
				one(t, rep, w.name, w.status, w.code)
			}
			var kinds []string
			for _, p := range rep.Misbehaviour {
				kinds = append(kinds, p.Kind)
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tc.kinds) {
				t.Fatalf("proofs of kinds %v, want %v", kinds, tc.kinds)
			}
			checkProofs(t, rep, trust.LogKeys, tc.refs)
		})
	}
}

// TestExtraCheckpointEmptyList: an input that is an empty JSON list (what a witness without
// forks serves at /<origin id>/forks) gives no checkpoint, and says so in a log.extra_checkpoint
// check that is not evaluated, rather than vanishing from the report.
func TestExtraCheckpointEmptyList(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 4, SealAt: []int{4}, CheckpointFiles: true})
	for _, in := range []string{"[]", " [ ]\n"} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			o := verifier.Options{Trust: testbundle.Trust(t), Now: func() time.Time { return testbundle.Base },
				Checkpoints: []verifier.ExtraCheckpoint{{Name: "forks.json", Data: []byte(in)}}}
			rep, err := verifier.Verify(context.Background(), b.Reader(t), o)
			if err != nil {
				t.Fatal(err)
			}
			c := one(t, rep, "log.extra_checkpoint", verifier.NotEvaluated, verifier.CodeExtraCheckpoint)
			if c.Where != "forks.json" || !strings.Contains(c.Detail, "holds no checkpoint") {
				t.Errorf("check %+v", c)
			}
			if rep.Verdict != verifier.NotEvaluated {
				t.Errorf("verdict %s\n%s", rep.Verdict, text(t, rep))
			}
		})
	}
}

// TestMisbehaviourFromBundleProof: a bundle whose own log/consistency file links a checkpoint
// to a forked one gives the proof built from its notes and that file's hashes.
func TestMisbehaviourFromBundleProof(t *testing.T) {
	f := newForkFixture(t)
	b := f.b.Clone()
	b.Files[bundle.CheckpointFile(6)] = signTree(t, b, b.LogTree, 6)
	b.Files[bundle.CheckpointFile(10)] = signTree(t, b, f.fork, 10)
	p, err := f.fork.ConsistencyProof(6, 10)
	if err != nil {
		t.Fatal(err)
	}
	b.Files[bundle.LogConsistencyFile(6, 10)] = bundle.MarshalConsistencyProof(p)
	b.Digests()
	trust := testbundle.Trust(t)
	rep, err := verifier.Verify(context.Background(), b.Reader(t), verifier.Options{Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	one(t, rep, "log.consistency", verifier.Broken, verifier.CodeInconsistent)
	if len(rep.Misbehaviour) != 1 || rep.Misbehaviour[0].Kind != misbehaviour.KindInconsistent {
		t.Fatalf("proofs %+v", rep.Misbehaviour)
	}
	checkProofs(t, rep, trust.LogKeys, 0)
}

// checkProofs holds every proof of a report to misbehaviour.Check: proven under the log
// key the verifier used, not proven under another key, observed by evident verify, with refs
// references that verify under the log key.
func checkProofs(t *testing.T, rep *verifier.Report, logKeys []string, refs int) {
	t.Helper()
	_, otherVkey, _ := note.GenerateKey(rand.Reader, rep.Log.Origin)
	for i, p := range rep.Misbehaviour {
		back, err := misbehaviour.Parse(mustMarshal(t, p))
		if err != nil {
			t.Fatalf("proof %d does not parse back: %v", i, err)
		}
		res := misbehaviour.Check(back, misbehaviour.Keys{LogKeys: logKeys})
		if !res.Proven || res.References != refs || len(back.References) != refs {
			t.Errorf("proof %d under the log key: proven %v (%s), %d references verified, %d kept, want %d", i, res.Proven, res.Reason, res.References, len(back.References), refs)
		}
		if res := misbehaviour.Check(back, misbehaviour.Keys{LogKeys: []string{otherVkey}}); res.Proven {
			t.Errorf("proof %d proven under another key: %s", i, res.Reason)
		}
		if back.Observer != verifier.Observer || back.Origin != rep.Log.Origin {
			t.Errorf("proof %d: observer %q origin %q", i, back.Observer, back.Origin)
		}
	}
}

func mustMarshal(t *testing.T, v interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := v.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExtraCheckpointWithJunkLine: a forked checkpoint that carries, besides the log's valid
// signature, a line under the log key's name and hash that does not verify (anyone can
// append one, and a log that forks has every reason to) is still the log's checkpoint: the
// fork is found, and its proof holds under the log key.
func TestExtraCheckpointWithJunkLine(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{4, 8, 12}, CheckpointFiles: true})
	fork := testonly.New(rfc6962.DefaultHasher)
	for i := range 8 {
		fork.AppendData(fmt.Appendf(nil, "another history %d", i))
	}
	good := signTree(t, b, fork, 8)
	sig := make([]byte, 4+64)
	binary.BigEndian.PutUint32(sig, b.NoteSigner.KeyHash())
	junk := "— " + b.NoteSigner.Name() + " " + base64.StdEncoding.EncodeToString(sig) + "\n"
	body, goodLine, _ := strings.Cut(string(good), "\n\n")
	logVKey := strings.TrimSpace(string(b.Files[bundle.LogKeyFile]))
	for _, tc := range []struct {
		name    string
		note    string
		dropped bool // note.Open reads only the first line of a key: one before the log's fails it
	}{
		{"junk line after the log's", string(good) + junk, false},
		{"junk line before the log's", body + "\n\n" + junk + goodLine, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := verifier.Options{Trust: testbundle.Trust(t), Now: func() time.Time { return testbundle.Base },
				Checkpoints: []verifier.ExtraCheckpoint{{Name: "forged", Data: []byte(tc.note)}}}
			rep, err := verifier.Verify(context.Background(), b.Reader(t), o)
			if err != nil {
				t.Fatal(err)
			}
			c := one(t, rep, "log.extra_checkpoint", verifier.Verified, "")
			if strings.Contains(c.Detail, "was dropped") != tc.dropped {
				t.Errorf("the check says a line was dropped: %v, want %v: %s", !tc.dropped, tc.dropped, c.Detail)
			}
			one(t, rep, "log.fork", verifier.Broken, verifier.CodeFork)
			if len(rep.Misbehaviour) != 1 {
				t.Fatalf("%d proofs, want 1\n%s", len(rep.Misbehaviour), text(t, rep))
			}
			if r := misbehaviour.Check(rep.Misbehaviour[0], misbehaviour.Keys{LogKeys: []string{logVKey}}); !r.Proven {
				t.Fatalf("the proof is not proven: %s", r.Reason)
			}
		})
	}
}
