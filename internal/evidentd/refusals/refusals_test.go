package refusals

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
)

const origin = "example.test/log"

// signed returns checkpoint notes of origin at size 5 with the given roots, signed by s.
func signed(t *testing.T, s note.Signer, roots ...byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, root := range roots {
		n, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: origin, Size: 5, Hash: bytes.Repeat([]byte{root}, 32)}.Marshal())}, s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func newSigner(t *testing.T, name string) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

// TestKeep: a refusal is kept as a file that reads back as the refusal, logged at ERROR
// with what to run, and counted; the same refusal again is counted, not kept or logged
// twice; beyond Max refusals are counted and logged once as not kept; a keeper opened again
// knows the files (and only them).
func TestKeep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), Dir)
	var logs bytes.Buffer
	k, err := Open(dir, Options{Max: 2, LogKeyFile: "data/keys/log.vkey", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s, vkey := newSigner(t, origin)
	cps := signed(t, s, 1, 2)
	p, err := misbehaviour.New(cps[0], cps[1], nil, "witness w1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	proof, _ := p.Marshal()
	request := (&tlogwitness.Request{OldSize: 5, Checkpoint: cps[1]}).Marshal()
	// The same checkpoint signed again (another signature line): the same refusal.
	other, _ := newSigner(t, "witness.test/other")
	text, _, _ := bytes.Cut(cps[1], []byte("\n\n"))
	resigned, err := note.Sign(&note.Note{Text: string(text) + "\n"}, s, other)
	if err != nil {
		t.Fatal(err)
	}
	again := (&tlogwitness.Request{OldSize: 5, Checkpoint: resigned}).Marshal()
	t0 := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)

	steps := []struct {
		name    string
		r       *misbehaviour.Refusal
		files   int
		lines   int    // ERROR lines logged so far
		line    string // in the last line
		counter string // kind counted
		count   float64
	}{
		{"same size, with a proof", misbehaviour.NewRefusal("w1", "http://w1/add-checkpoint", 409, request, proof, t0), 1, 1,
			"check it with evident misbehaviour check " + dir, misbehaviour.KindSameSize, 1},
		{"the same refusal again", misbehaviour.NewRefusal("w1", "http://w1/add-checkpoint", 409, again, proof, t0.Add(time.Second)), 1, 1,
			"", misbehaviour.KindSameSize, 2},
		{"a failed consistency proof, no proof sent", misbehaviour.NewRefusal("w1", "http://w1/add-checkpoint", 422, request, []byte("bad proof\n"), t0.Add(2*time.Second)), 2, 2,
			"the witness sent no proof with it", misbehaviour.KindInconsistent, 1},
		{"beyond Max", misbehaviour.NewRefusal("w2", "http://w2/add-checkpoint", 422, request, nil, t0.Add(3*time.Second)), 2, 3,
			"are not kept", misbehaviour.KindInconsistent, 1},
		{"beyond Max again", misbehaviour.NewRefusal("w2", "http://w2/add-checkpoint", 409, request, nil, t0.Add(4*time.Second)), 2, 3,
			"", misbehaviour.KindSameSize, 1},
	}
	for i, st := range steps {
		k.Keep(st.r)
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if logs.Len() == 0 {
			lines = nil
		}
		if len(files) != st.files || len(lines) != st.lines || k.Kept() != st.files {
			t.Fatalf("%s: %d files (Kept %d), %d log lines; want %d, %d\n%s", st.name, len(files), k.Kept(), len(lines), st.files, st.lines, logs.String())
		}
		if st.line != "" && (!strings.Contains(lines[len(lines)-1], st.line) || !strings.HasPrefix(lines[len(lines)-1], "time=") || !strings.Contains(lines[len(lines)-1], "level=ERROR")) {
			t.Fatalf("%s: last log line %q, want %q at ERROR", st.name, lines[len(lines)-1], st.line)
		}
		total := counted(t, k, "w1", misbehaviour.KindSameSize) +
			counted(t, k, "w1", misbehaviour.KindInconsistent) +
			counted(t, k, "w2", misbehaviour.KindSameSize) +
			counted(t, k, "w2", misbehaviour.KindInconsistent)
		if total != float64(i+1) {
			t.Fatalf("%s: %v refusals counted", st.name, total)
		}
		if got := counted(t, k, st.r.Witness, st.counter); got != st.count {
			t.Fatalf("%s: evident_witness_refusals_total{witness=%q,kind=%q} = %v, want %v", st.name, st.r.Witness, st.counter, got, st.count)
		}
	}

	// The first file reads back as the refusal, and its proof is proven with the log key.
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	r, err := misbehaviour.ParseRefusal(b)
	if err != nil || r.Witness != "w1" || r.Status != 409 || r.Request != string(request) || r.Proof == nil {
		t.Fatalf("%s: %+v, %v", files[0], r, err)
	}
	if res := misbehaviour.Check(r.Proof, misbehaviour.Keys{LogKeys: []string{vkey}}); !res.Proven {
		t.Fatalf("kept proof not proven: %s", res.Reason)
	}
	if !strings.Contains(logs.String(), "check it with evident misbehaviour check "+files[0]+" --log-key data/keys/log.vkey") {
		t.Fatalf("the log does not say how to check %s:\n%s", files[0], logs.String())
	}

	// Opened again, the keeper knows the two files and nothing else of the directory.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "."+filepath.Base(files[0])+".tmp123"), []byte("x"), 0o600)
	k2, err := Open(dir, Options{Max: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if k2.Kept() != 2 {
		t.Fatalf("reopened: %d kept, want 2", k2.Kept())
	}
	k2.Keep(steps[1].r) // already kept before the restart
	if k2.Kept() != 2 {
		t.Fatalf("a refusal kept before the restart was kept again")
	}
}

// counted is the value of evident_witness_refusals_total{witness,kind} that k's collector
// gives a registry, as /metrics serves it.
func counted(t *testing.T, k *Keeper, witness, kind string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(k.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "evident_witness_refusals_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["witness"] == witness && labels["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
