package witness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
)

// forkedLogs returns a log of 24 leaves and a fork of it under the same key that shares the
// first 10 leaves and differs after them.
func forkedLogs(t *testing.T) (main, fork *testLog) {
	t.Helper()
	main = newTestLog(t, "log.test/fork")
	main.grow(10, "main")
	fork = main.fork()
	main.grow(14, "main")
	fork.grow(14, "evil")
	return main, fork
}

// corrupt returns body with the first byte of its first proof hash changed.
func corrupt(t *testing.T, body []byte) []byte {
	t.Helper()
	r, err := ParseRequest(body)
	if err != nil || len(r.Proof) == 0 {
		t.Fatalf("no proof to corrupt: %v", err)
	}
	r.Proof[0][0] ^= 1
	return r.Marshal()
}

// otherWitnessCosigned adds a cosignature (alg: AlgEd25519 or AlgMLDSA44) by a witness this
// one does not know.
func otherWitnessCosigned(t *testing.T, cp []byte, alg string) []byte {
	t.Helper()
	skey, _, err := GenerateKey("witness.test/other", alg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := bytes.Cut(cp, []byte("\n\n"))
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(nil), cp...), signed[len(text)+2:]...)
}

// TestRefusalsCarryProofs: each refusal of a validly signed checkpoint that contradicts the
// held one answers with a proof of misbehaviour, kept on disk and listed at /forks, that
// misbehaviour.Check calls proven exactly when the log signed two histories.
func TestRefusalsCarryProofs(t *testing.T) {
	main, fork := forkedLogs(t)
	tests := []struct {
		name    string
		held    uint64 // the size the witness cosigns first, from main
		body    func() []byte
		status  int
		kind    string
		proven  bool
		because string // in Check's reason
	}{
		{"same size, other root", 13, func() []byte {
			return (&Request{OldSize: 13, Checkpoint: otherWitnessCosigned(t, fork.checkpoint(t, 13), AlgEd25519)}).Marshal()
		}, http.StatusConflict, misbehaviour.KindSameSize, true, "different roots"},
		{"a fork's own consistency proof", 13, func() []byte { return fork.request(t, 13, 21) },
			http.StatusUnprocessableEntity, misbehaviour.KindInconsistent, true, "not one append-only history"},
		{"a faulty proof between two trees of the log", 13, func() []byte { return corrupt(t, main.request(t, 13, 21)) },
			http.StatusUnprocessableEntity, misbehaviour.KindInconsistent, false, "faulty"},
		{"a faulty proof to a fork", 13, func() []byte { return corrupt(t, fork.request(t, 13, 21)) },
			http.StatusUnprocessableEntity, misbehaviour.KindInconsistent, false, "faulty"},
		{"a fork's own proof from a power-of-two size", 16, func() []byte { return fork.request(t, 16, 21) },
			http.StatusUnprocessableEntity, misbehaviour.KindInconsistent, false, "power of two"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, vkeys, st := newTestWitness(t, dir, true, main)
			defer st.Close()
			srv := httptest.NewServer(w.Handler())
			defer srv.Close()
			if code, _, b := post(t, srv, main.request(t, 0, tc.held)); code != http.StatusOK {
				t.Fatalf("cosigning the held checkpoint: %d %s", code, b)
			}
			id := OriginID(main.origin)
			_, held := get(t, srv.URL+"/"+id+"/checkpoint")
			body := tc.body()
			submitted, err := ParseRequest(body)
			if err != nil {
				t.Fatal(err)
			}

			resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var answer bytes.Buffer
			answer.ReadFrom(resp.Body)
			resp.Body.Close()
			wantVerdict := map[bool]string{true: "proven", false: "not-proven"}[tc.proven]
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != ContentTypeJSON || resp.Header.Get(HeaderMisbehaviour) != wantVerdict {
				t.Fatalf("answer %d, Content-Type %q, %s %q; want %d, %q, %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"),
					HeaderMisbehaviour, resp.Header.Get(HeaderMisbehaviour), tc.status, ContentTypeJSON, wantVerdict, answer.Bytes())
			}
			p, err := misbehaviour.Parse(answer.Bytes())
			if err != nil {
				t.Fatalf("the answer is not a proof file: %v\n%s", err, answer.Bytes())
			}

			// The proof: the held note as served (the log's signature and this witness's
			// cosignatures), the submitted note as sent, the request's consistency proof.
			if p.Kind != tc.kind || p.Origin != main.origin || p.Observer != "witness "+w.Name() ||
				p.Checkpoints[0] != string(held) || p.Checkpoints[1] != string(submitted.Checkpoint) {
				t.Fatalf("proof %+v\nheld %q\nsubmitted %q", p, held, submitted.Checkpoint)
			}
			for _, vk := range vkeys {
				v, err := fnote.NewVerifierForCosignatureV1(vk)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := note.Open([]byte(p.Checkpoints[0]), note.VerifierList(v)); err != nil {
					t.Errorf("the held checkpoint lacks the witness's cosignature by %.30s: %v", vk, err)
				}
			}
			if tc.kind == misbehaviour.KindInconsistent && !slices.Equal(p.ConsistencyProof, b64s(submitted.Proof)) {
				t.Errorf("consistency proof %q, want the request's", p.ConsistencyProof)
			}

			res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{main.vkey}})
			if res.Proven != tc.proven || !strings.Contains(res.Reason, tc.because) {
				t.Fatalf("Check: proven %v (%s), want %v with %q", res.Proven, res.Reason, tc.proven, tc.because)
			}
			if other := newTestLog(t, main.origin); misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{other.vkey}}).Proven {
				t.Fatal("Check calls the proof proven under another log key")
			}

			// Refused again: kept once. /forks and the file on disk hold the same proof.
			if code, _, _ := post(t, srv, body); code != tc.status {
				t.Fatalf("second refusal: %d", code)
			}
			code, list := get(t, srv.URL+"/"+id+"/forks")
			listed, err := misbehaviour.ParseAll(list)
			if code != http.StatusOK || err != nil || len(listed) != 1 || !sameProof(listed[0], p) {
				t.Fatalf("forks: %d, %d proofs, %v\n%s", code, len(listed), err, list)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "state", id, "forks", "*.json"))
			if len(files) != 1 {
				t.Fatalf("%d files kept, want 1", len(files))
			}
			onDisk, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if kept, err := misbehaviour.Parse(onDisk); err != nil || !sameProof(kept, p) {
				t.Fatalf("kept file: %v\n%s", err, onDisk)
			}
		})
	}
}

func b64s(hs [][]byte) []string {
	var out []string
	for _, h := range hs {
		out = append(out, base64.StdEncoding.EncodeToString(h))
	}
	return out
}

// sameProof compares what a proof proves (not when it was observed).
func sameProof(a, b *misbehaviour.Proof) bool {
	return a.Kind == b.Kind && a.Origin == b.Origin && slices.Equal(a.Checkpoints, b.Checkpoints) &&
		slices.Equal(a.ConsistencyProof, b.ConsistencyProof)
}

// TestLegacyForkRecordsServedAsProofs: a state directory holding fork records of the
// earlier form serves them converted to proofs (the files stay as they are), and leaves out,
// with an ERROR naming it, a file that is no record at all.
func TestLegacyForkRecordsServedAsProofs(t *testing.T) {
	main, fork := forkedLogs(t)
	dir := t.TempDir()
	var logs bytes.Buffer
	w, _, st := newLoggedWitness(t, dir, false, slog.New(slog.NewTextHandler(&logs, nil)), main)
	defer st.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	if code, _, b := post(t, srv, main.request(t, 0, 13)); code != http.StatusOK {
		t.Fatalf("cosigning: %d %s", code, b)
	}
	id := OriginID(main.origin)
	_, held := get(t, srv.URL+"/"+id+"/checkpoint")

	forks := filepath.Join(dir, "state", id, "forks")
	if err := os.MkdirAll(forks, 0o700); err != nil {
		t.Fatal(err)
	}
	legacy, err := json.MarshalIndent(map[string]string{"kind": "consistency_proof_failed", "origin": main.origin,
		"observed": "2025-11-02T10:04:05.123456789Z", "held": string(held), "request": string(fork.request(t, 13, 21))}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"0123.json": legacy, "broken.json": []byte(`{"kind": "same_size_other_root"`)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(forks, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	code, list := get(t, srv.URL+"/"+id+"/forks")
	proofs, err := misbehaviour.ParseAll(list)
	if code != http.StatusOK || err != nil || len(proofs) != 1 {
		t.Fatalf("forks: %d, %d proofs, %v\n%s", code, len(proofs), err, list)
	}
	if res := misbehaviour.Check(proofs[0], misbehaviour.Keys{LogKeys: []string{main.vkey}}); !res.Proven || proofs[0].Observed != "2025-11-02T10:04:05Z" {
		t.Fatalf("converted record: proven %v (%s), observed %q", res.Proven, res.Reason, proofs[0].Observed)
	}
	for name, b := range files {
		if kept, err := os.ReadFile(filepath.Join(forks, name)); err != nil || !bytes.Equal(kept, b) {
			t.Errorf("%s was rewritten (%v)", name, err)
		}
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "broken.json") {
		t.Errorf("no ERROR naming the unreadable file:\n%s", logs.String())
	}
}

// TestForkLogLine: the WARN line says whether the kept file proves two histories.
func TestForkLogLine(t *testing.T) {
	main, fork := forkedLogs(t)
	var logs bytes.Buffer
	w, _, st := newLoggedWitness(t, t.TempDir(), false, slog.New(slog.NewTextHandler(&logs, nil)), main)
	defer st.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	post(t, srv, main.request(t, 0, 13))
	for _, tc := range []struct {
		body []byte
		want string
	}{
		{corrupt(t, main.request(t, 13, 21)), "a faulty proof, not a proof of misbehaviour"},
		{fork.request(t, 13, 21), "the log signed two histories"},
	} {
		logs.Reset()
		post(t, srv, tc.body)
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tc.want) {
			t.Errorf("log line %q, want a WARN with %q", logs.String(), tc.want)
		}
	}
}

// TestOversizedSubmittedCheckpoint: a refused checkpoint with more cosignatures than a proof
// file holds is kept with the log's signature only, and the proof still holds.
func TestOversizedSubmittedCheckpoint(t *testing.T) {
	main, fork := forkedLogs(t)
	w, _, st := newTestWitness(t, t.TempDir(), false, main)
	defer st.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	post(t, srv, main.request(t, 0, 13))
	cp := fork.checkpoint(t, 13)
	for len(cp) <= misbehaviour.MaxCheckpoint {
		cp = otherWitnessCosigned(t, cp, AlgMLDSA44) // a signed note holds at most 100 signatures: big ones
	}
	code, _, answer := post(t, srv, (&Request{OldSize: 13, Checkpoint: cp}).Marshal())
	p, err := misbehaviour.Parse(answer)
	if code != http.StatusConflict || err != nil {
		t.Fatalf("answer %d: %v", code, err)
	}
	if want := fork.checkpoint(t, 13); p.Checkpoints[1] != string(want) {
		t.Errorf("submitted checkpoint kept as %q, want the log-signed note %q", p.Checkpoints[1], want)
	}
	if res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{main.vkey}}); !res.Proven {
		t.Errorf("not proven: %s", res.Reason)
	}
}

// withJunkSignature adds a signature line by a key nobody knows, different for each i: a
// note may carry many, and anyone can add them.
func withJunkSignature(t *testing.T, body []byte, i int) []byte {
	t.Helper()
	r, err := ParseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	sig := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%04d junk signature", i))
	r.Checkpoint = fmt.Appendf(bytes.Clone(r.Checkpoint), "— junk.test/%d %s\n", i, sig)
	return r.Marshal()
}

// faultyProof returns body with its first proof hash changed in a way that depends on i.
func faultyProof(t *testing.T, body []byte, i int) []byte {
	t.Helper()
	r, err := ParseRequest(body)
	if err != nil || len(r.Proof) == 0 {
		t.Fatalf("no proof to corrupt: %v", err)
	}
	r.Proof[0][0] ^= byte(i + 1)
	r.Proof[0][1] ^= byte((i + 1) >> 8)
	return r.Marshal()
}

// TestFaultyProofFloodKeepsForks: anyone holding a log-signed checkpoint newer than the
// witness's can make refusals that prove nothing (a made-up consistency proof, junk signature
// lines). One log-signed checkpoint with one proof is kept once whatever other signature lines
// it carries; not-proven records have a cap of their own, so a flood of them never stops a
// proof that the log signed two histories from being kept and served.
func TestFaultyProofFloodKeepsForks(t *testing.T) {
	main, fork := forkedLogs(t)
	dir := t.TempDir()
	w, _, st := newTestWitness(t, dir, false, main)
	defer st.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	if code, _, b := post(t, srv, main.request(t, 0, 13)); code != http.StatusOK {
		t.Fatalf("cosigning the held checkpoint: %d %s", code, b)
	}
	id := OriginID(main.origin)
	forks := filepath.Join(dir, "state", id, "forks")
	kept := func(pattern string) int {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(forks, pattern))
		if err != nil {
			t.Fatal(err)
		}
		return len(files)
	}
	refuse := func(body []byte, status int, verdict string) {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status || resp.Header.Get(HeaderMisbehaviour) != verdict {
			t.Fatalf("answer %d %s %q, want %d %q", resp.StatusCode, HeaderMisbehaviour, resp.Header.Get(HeaderMisbehaviour), status, verdict)
		}
	}

	const flood = 150
	faulty := corrupt(t, main.request(t, 13, 21))
	for i := range flood {
		refuse(withJunkSignature(t, faulty, i), http.StatusUnprocessableEntity, "not-proven")
	}
	if n := kept("*.json"); n != 1 {
		t.Fatalf("%d files kept for one log-signed checkpoint and proof with %d sets of junk signature lines, want 1", n, flood)
	}
	for i := range flood {
		refuse(withJunkSignature(t, faultyProof(t, main.request(t, 13, 21), i), i), http.StatusUnprocessableEntity, "not-proven")
	}
	if n := kept(notProvenPrefix + "*.json"); n != maxNotProven {
		t.Fatalf("%d not-proven files kept after %d distinct faulty proofs, want the cap %d", n, flood+1, maxNotProven)
	}

	refuse(fork.request(t, 13, 21), http.StatusUnprocessableEntity, "proven")
	if n, all := kept("*.json")-kept(notProvenPrefix+"*.json"), kept("*.json"); n != 1 || all != maxNotProven+1 {
		t.Fatalf("%d proven files of %d kept after the fork, want 1 of %d", n, all, maxNotProven+1)
	}
	code, list := get(t, srv.URL+"/"+id+"/forks")
	proofs, err := misbehaviour.ParseAll(list)
	if code != http.StatusOK || err != nil || len(proofs) != maxNotProven+1 {
		t.Fatalf("forks: %d, %d proofs, %v", code, len(proofs), err)
	}
	var proven int
	for _, p := range proofs {
		if misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{main.vkey}}).Proven {
			proven++
		}
	}
	if proven != 1 {
		t.Fatalf("/forks serves %d proven proofs, want 1", proven)
	}
}
