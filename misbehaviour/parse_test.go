package misbehaviour_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// legacyRecord is a witness fork record of the earlier form, built as evident-witness wrote
// it: the checkpoint it held (with its cosignature) and the whole add-checkpoint body.
func legacyRecord(t testing.TB, kind, origin string, held []byte, req *tlogwitness.Request) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]string{"kind": kind, "origin": origin, "observed": "2026-05-17T09:00:00.123456789Z",
		"held": string(held), "request": string(req.Marshal())})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func marshal(t testing.TB, p interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// notARecord is what ParseAll says of JSON that is none of the records it reads.
const notARecord = "not a proof of misbehaviour, a witness fork record or a refusal"

// legacyEdit sets one member of an earlier witness record.
func legacyEdit(t testing.TB, record []byte, member, value string) []byte {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(record, &m); err != nil {
		t.Fatal(err)
	}
	m[member] = value
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseAll reads every form the project's tools write and checks the proofs it finds
// against the log's key.
func TestParseAll(t *testing.T) {
	l := forkedLog(t)
	w, _ := newWitness(t, "w1.example")
	ed := misbehaviour.Keys{LogKeys: []string{l.ed}}
	fork := mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 12), l.proof(t, "b", 7, 12))
	same := mustNew(t, l.checkpoint(t, "a", 9), l.checkpoint(t, "b", 9), nil)
	held := l.checkpoint(t, "a", 7, w)
	legacyFork := legacyRecord(t, misbehaviour.KindInconsistent, l.origin, held,
		&tlogwitness.Request{OldSize: 7, Proof: l.proof(t, "b", 7, 12), Checkpoint: l.checkpoint(t, "b", 12)})
	legacySame := legacyRecord(t, misbehaviour.KindSameSize, l.origin, held,
		&tlogwitness.Request{OldSize: 7, Checkpoint: l.checkpoint(t, "b", 7)})
	legacyOtherOld := legacyRecord(t, misbehaviour.KindInconsistent, l.origin, held,
		&tlogwitness.Request{OldSize: 5, Proof: l.proof(t, "b", 5, 12), Checkpoint: l.checkpoint(t, "b", 12)})
	at := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	refusal := misbehaviour.NewRefusal("w1.example", "http://127.0.0.1:1/add-checkpoint", 409, []byte("old 7\n\n"), marshal(t, fork), at)
	bare := misbehaviour.NewRefusal("w1.example", "http://127.0.0.1:1/add-checkpoint", 409, []byte("old 7\n\n"), []byte("checkpoint contradicts the cosigned one\n"), at)
	list := func(items ...[]byte) []byte {
		return append(append([]byte("[\n"), bytes.Join(items, []byte(",\n"))...), "\n]\n"...)
	}

	for _, tc := range []struct {
		name   string
		data   []byte
		proven []bool // one per proof found
		err    error
		msg    string // in the error, when set
	}{
		{name: "a proof", data: marshal(t, fork), proven: []bool{true}},
		{name: "a list of proofs (a witness's forks answer)", data: list(marshal(t, fork), marshal(t, same)), proven: []bool{true, true}},
		{name: "an empty list", data: []byte("[]"), proven: nil},
		{name: "an earlier witness record, failed proof", data: legacyFork, proven: []bool{true}},
		{name: "an earlier witness record, same size", data: legacySame, proven: []bool{true}},
		{name: "an earlier witness record whose request starts elsewhere", data: legacyOtherOld, proven: []bool{false}},
		{name: "a list of earlier witness records", data: list(legacySame, legacyFork), proven: []bool{true, true}},
		{name: "a refusal with a proof", data: marshal(t, refusal), proven: []bool{true}},
		{name: "a refusal without a proof", data: marshal(t, bare), err: misbehaviour.ErrNoProof},
		{name: "a list with a refusal without a proof", data: list(marshal(t, fork), marshal(t, bare)), err: misbehaviour.ErrNoProof},
		{name: "not JSON", data: []byte("old 7\n\nlog.example\n"), err: misbehaviour.ErrFormat},
		{name: "another format", data: []byte(`{"format":"evident-trust/v1"}`), err: misbehaviour.ErrFormat},
		{name: "an earlier record with a member too many", data: append(bytes.Clone(legacySame[:len(legacySame)-1]), `,"x":1}`...), err: misbehaviour.ErrFormat},
		{name: "an earlier record with a malformed request", data: []byte(`{"kind":"same_size_other_root","origin":"o","observed":"","held":"","request":"old x"}`), err: misbehaviour.ErrFormat},
		{name: "a list of non-objects", data: []byte(`[1, 2]`), err: misbehaviour.ErrFormat},
		{name: "an empty object", data: []byte(`{}`), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "null", data: []byte(`null`), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "a list of an empty object", data: []byte(`[{}]`), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "a list of null", data: []byte(`[null]`), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "an earlier record of an unknown kind", data: legacyEdit(t, legacySame, "kind", "split_view"), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "an earlier record without its held checkpoint", data: legacyEdit(t, legacySame, "held", ""), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "an earlier record without its request", data: legacyEdit(t, legacySame, "request", ""), err: misbehaviour.ErrFormat, msg: notARecord},
		{name: "an earlier record with a malformed time", data: legacyEdit(t, legacySame, "observed", "17 May 2026"), err: misbehaviour.ErrFormat, msg: "observed"},
		{name: "an earlier record without a time", data: legacyEdit(t, legacySame, "observed", ""), proven: []bool{true}},
		{name: "over the size limit", data: bytes.Repeat([]byte(" "), misbehaviour.MaxSize+1), err: misbehaviour.ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := misbehaviour.ParseAll(tc.data)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(fmt.Sprint(err), tc.msg) {
					t.Fatalf("ParseAll: %v, want %v with %q", err, tc.err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != len(tc.proven) {
				t.Fatalf("%d proofs, want %d", len(ps), len(tc.proven))
			}
			for i, p := range ps {
				if res := misbehaviour.Check(p, ed); res.Proven != tc.proven[i] {
					t.Errorf("proof %d: proven %v (%s), want %v", i+1, res.Proven, res.Reason, tc.proven[i])
				}
			}
		})
	}
}

// TestLegacyRecordKeepsTheHeldCheckpoint checks the proof made from an earlier witness
// record: the checkpoint held (cosignature included) first, the refused one second, the
// request's proof, and the observation time.
func TestLegacyRecordKeepsTheHeldCheckpoint(t *testing.T) {
	l := forkedLog(t)
	w, _ := newWitness(t, "w1.example")
	held, sub, proof := l.checkpoint(t, "a", 7, w), l.checkpoint(t, "b", 12), l.proof(t, "b", 7, 12)
	ps, err := misbehaviour.ParseAll(legacyRecord(t, misbehaviour.KindInconsistent, l.origin, held, &tlogwitness.Request{OldSize: 7, Proof: proof, Checkpoint: sub}))
	if err != nil {
		t.Fatal(err)
	}
	want := mustNew(t, held, sub, proof)
	want.Observer, want.Observed = "witness", "2026-05-17T09:00:00Z"
	if !reflect.DeepEqual(ps[0], want) {
		t.Fatalf("got %+v\nwant %+v", ps[0], want)
	}
}

// TestParseStrict checks that Parse refuses anything but a well-formed proof of this
// version, and that what it accepts marshals back to the same proof.
func TestParseStrict(t *testing.T) {
	l := forkedLog(t)
	good := marshal(t, mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 12), l.proof(t, "b", 7, 12)))
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	big := strings.Repeat("x", misbehaviour.MaxCheckpoint+1)
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"the proof", good, true},
		{"no observer or time", edit(func(m map[string]any) { delete(m, "observer"); delete(m, "observed") }), true},
		{"a member too many", edit(func(m map[string]any) { m["signature"] = "x" }), false},
		{"a duplicate member", append([]byte(`{"kind":"same_size_other_root",`), good[1:]...), false},
		{"version 2", edit(func(m map[string]any) { m["format"] = "evident-misbehaviour/v2" }), false},
		{"no format", edit(func(m map[string]any) { delete(m, "format") }), false},
		{"an unknown kind", edit(func(m map[string]any) { m["kind"] = "split_view" }), false},
		{"no origin", edit(func(m map[string]any) { m["origin"] = "" }), false},
		{"one checkpoint", edit(func(m map[string]any) { m["checkpoints"] = m["checkpoints"].([]any)[:1] }), false},
		{"three checkpoints", edit(func(m map[string]any) { c := m["checkpoints"].([]any); m["checkpoints"] = append(c, c[0]) }), false},
		{"a checkpoint over the limit", edit(func(m map[string]any) { m["checkpoints"].([]any)[0] = big }), false},
		{"a reference over the limit", edit(func(m map[string]any) { m["references"] = []any{big} }), false},
		{"too many references", edit(func(m map[string]any) { m["references"] = make([]any, misbehaviour.MaxReferences+1) }), false},
		{"a hash not base64", edit(func(m map[string]any) { m["consistency_proof"].([]any)[0] = "not base64!" }), false},
		{"a hash of 31 bytes", edit(func(m map[string]any) {
			m["consistency_proof"].([]any)[0] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
		}), false},
		{"too many hashes", edit(func(m map[string]any) {
			m["consistency_proof"] = make([]any, tlogwitness.MaxProofLines+1)
			for i := range m["consistency_proof"].([]any) {
				m["consistency_proof"].([]any)[i] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
			}
		}), false},
		{"a time that is not RFC 3339", edit(func(m map[string]any) { m["observed"] = "17 May 2026" }), false},
		{"a list", append(append([]byte("["), good...), ']'), false},
		{"trailing data", append(append([]byte{}, good...), "{}"...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := misbehaviour.Parse(tc.data)
			if !tc.ok {
				if !errors.Is(err, misbehaviour.ErrFormat) {
					t.Fatalf("Parse: %v, want ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p2, err := misbehaviour.Parse(marshal(t, p))
			if err != nil || !reflect.DeepEqual(p, p2) {
				t.Fatalf("round trip: %v\n%+v\n%+v", err, p, p2)
			}
		})
	}
}

// TestNewRefusesMismatchedCheckpoints checks that New takes two signed checkpoints of one origin.
func TestNewRefusesMismatchedCheckpoints(t *testing.T) {
	l := forkedLog(t)
	o := newLog(t, "log.example/other")
	o.grow("a", 7, "", 0)
	for name, pair := range map[string][2][]byte{
		"two origins":       {l.checkpoint(t, "a", 7), o.checkpoint(t, "a", 7)},
		"no signature":      {l.checkpoint(t, "a", 7), []byte("log.example/misbehaviour\n7\nAAAA\n")},
		"not a checkpoint":  {l.checkpoint(t, "a", 7), []byte("hello\n\n— x AAAA\n")},
		"over the size cap": {l.checkpoint(t, "a", 7), bytes.Repeat([]byte("x"), misbehaviour.MaxCheckpoint+1)},
	} {
		if _, err := misbehaviour.New(pair[0], pair[1], nil, "test", time.Time{}); !errors.Is(err, misbehaviour.ErrFormat) {
			t.Errorf("%s: New: %v, want ErrFormat", name, err)
		}
	}
}

// goldenLog is the fixed log of the golden files: an Ed25519 key from a fixed seed (Ed25519
// signatures are deterministic) and the two histories of forkedLog.
func goldenLog(t testing.TB) *testLog {
	t.Helper()
	l := newEd25519Log(t, "log.example/golden", fixedEntropy("evident misbehaviour golden log"))
	l.grow("a", 12, "", 0)
	l.grow("b", 12, "a", 3)
	return l
}

// TestGolden pins the file format: a proof of each kind and a refusal, written by Marshal
// from fixed keys and trees (-update rewrites them), parse back to the same bytes and prove
// the fork under the golden log key (testdata/log.vkey), not under an impostor's
// (testdata/impostor.vkey: the same origin, another key).
func TestGolden(t *testing.T) {
	l := goldenLog(t)
	impostor := newEd25519Log(t, l.origin, fixedEntropy("evident misbehaviour golden impostor")) // same origin, another key
	at := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	fork, err := misbehaviour.New(l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 12), l.proof(t, "b", 7, 12), "witness witness.example/w1", at)
	if err != nil {
		t.Fatal(err)
	}
	fork.AddReference(l.checkpoint(t, "a", 12))
	same, err := misbehaviour.New(l.checkpoint(t, "a", 9), l.checkpoint(t, "b", 9), nil, "evident verify", at)
	if err != nil {
		t.Fatal(err)
	}
	// The witness held history a's checkpoint of size 9 and answers the log's b with a proof.
	answer, err := misbehaviour.New(l.checkpoint(t, "a", 9), l.checkpoint(t, "b", 9), nil, "witness witness.example/w1", at)
	if err != nil {
		t.Fatal(err)
	}
	refusal := misbehaviour.NewRefusal("witness.example/w1", "http://127.0.0.1:1/add-checkpoint", 409,
		(&tlogwitness.Request{OldSize: 9, Checkpoint: l.checkpoint(t, "b", 9)}).Marshal(), marshal(t, answer), at)
	files := map[string][]byte{
		"consistency_proof_failed.golden": marshal(t, fork),
		"same_size_other_root.golden":     marshal(t, same),
		"refusal.golden":                  marshal(t, refusal),
		"log.vkey":                        []byte(l.ed + "\n"),
		"impostor.vkey":                   []byte(impostor.ed + "\n"),
	}
	for name, got := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what Marshal writes now (run with -update if the change is meant):\n%s", path, got)
			continue
		}
		if !strings.HasSuffix(name, ".golden") {
			continue
		}
		ps, err := misbehaviour.ParseAll(want)
		if err != nil || len(ps) != 1 {
			t.Fatalf("%s: %v", path, err)
		}
		if res := misbehaviour.Check(ps[0], misbehaviour.Keys{LogKeys: []string{l.ed}}); !res.Proven {
			t.Errorf("%s: not proven under the golden key: %s", path, res.Reason)
		}
		if res := misbehaviour.Check(ps[0], misbehaviour.Keys{LogKeys: []string{impostor.ed}}); res.Proven {
			t.Errorf("%s: proven under another key", path)
		}
	}
}

// TestHashes checks that Hashes gives back the consistency proof New was given, and refuses
// a hash that is not 32 bytes of strict base64.
func TestHashes(t *testing.T) {
	l := forkedLog(t)
	want := l.proof(t, "b", 7, 12)
	p := mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 12), want)
	got, err := p.Hashes()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Hashes: %x, %v; want %x", got, err, want)
	}
	if got, err := mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), nil).Hashes(); err != nil || len(got) != 0 {
		t.Fatalf("Hashes of a same-size proof: %x, %v", got, err)
	}
	for _, bad := range []string{"AAAA", "not base64!", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		p.ConsistencyProof[1] = bad
		if _, err := p.Hashes(); !errors.Is(err, misbehaviour.ErrFormat) {
			t.Errorf("Hashes with %q: %v, want ErrFormat", bad, err)
		}
	}
}

// TestCheckpointSize checks the unverified parse of a checkpoint note's origin and size.
func TestCheckpointSize(t *testing.T) {
	l := forkedLog(t)
	for _, tc := range []struct {
		name   string
		note   []byte
		origin string
		size   uint64
		ok     bool
	}{
		{"a signed checkpoint", l.checkpoint(t, "b", 12), l.origin, 12, true},
		{"the empty tree", l.checkpoint(t, "a", 0), l.origin, 0, true},
		{"no signature block", []byte(l.origin + "\n12\nAAAA\n"), "", 0, false},
		{"a size that is no number", []byte(l.origin + "\ntwelve\nq6VKLM0JQ9gS4gRE2o6t4DphAzuYL9TgfIlbsmJ82W8=\n\n— x AAAA\n"), "", 0, false},
		{"not a checkpoint", []byte("hello\n\n— x AAAA\n"), "", 0, false},
		{"over the size cap", bytes.Repeat([]byte("x"), misbehaviour.MaxCheckpoint+1), "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin, size, err := misbehaviour.CheckpointSize(tc.note)
			if !tc.ok {
				if !errors.Is(err, misbehaviour.ErrFormat) {
					t.Fatalf("CheckpointSize: %q %d %v, want ErrFormat", origin, size, err)
				}
				return
			}
			if err != nil || origin != tc.origin || size != tc.size {
				t.Fatalf("CheckpointSize: %q %d %v, want %q %d", origin, size, err, tc.origin, tc.size)
			}
		})
	}
}
