package witness

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogpolicy"
)

// TestAddCheckpoint walks one witness through every answer tlog-witness prescribes, in order.
func TestAddCheckpoint(t *testing.T) {
	dir := t.TempDir()
	lg := newTestLog(t, "log.test/a")
	lg.grow(10, "main")
	fork := lg.fork()
	lg.grow(10, "main")   // main: 20 leaves
	fork.grow(10, "evil") // fork: 20 leaves, same first 10
	stranger := newTestLog(t, "log.test/unknown")
	stranger.grow(3, "x")
	impostor := newTestLog(t, "log.test/a") // same origin, another key
	impostor.grow(5, "x")

	w, vkeys, st := newTestWitness(t, dir, true, lg)
	defer st.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()

	badProof := lg.request(t, 10, 20)
	badProof = bytes.Replace(badProof, []byte("old 10\n"), []byte("old 10\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), 1)

	steps := []struct {
		name   string
		body   []byte
		status int
		ctype  string
		body2  string // expected response body (exact), if set
	}{
		{"malformed", []byte("hello\n"), http.StatusBadRequest, "", ""},
		{"leading zero old size", []byte("old 01\n\n" + string(lg.checkpoint(t, 10))), http.StatusBadRequest, "", ""},
		{"unknown origin", stranger.request(t, 0, 3), http.StatusNotFound, "", ""},
		{"signed by an untrusted key", impostor.request(t, 0, 5), http.StatusForbidden, "", ""},
		{"old size above checkpoint size", lg.request(t, 10, 5), http.StatusBadRequest, "", ""},
		{"proof from size 0 must be empty", []byte("old 0\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n" + string(lg.checkpoint(t, 10))), http.StatusUnprocessableEntity, "", ""},
		{"first checkpoint", lg.request(t, 0, 10), http.StatusOK, "", ""},
		{"same checkpoint again", lg.request(t, 10, 10), http.StatusOK, "", ""},
		{"stale old size", lg.request(t, 0, 20), http.StatusConflict, ContentTypeTlogSize, "10\n"},
		{"old size ahead of held", lg.request(t, 15, 20), http.StatusConflict, ContentTypeTlogSize, "10\n"},
		{"bad consistency proof", badProof, http.StatusUnprocessableEntity, "", ""},
		{"grow", lg.request(t, 10, 20), http.StatusOK, "", ""},
		{"fork: same size, other root", fork.request(t, 20, 20), http.StatusConflict, "", ""},
		{"fork: consistent with nothing held", fork.request(t, 20, 20), http.StatusConflict, "", ""},
	}
	for _, s := range steps {
		code, ctype, body := post(t, srv, s.body)
		if code != s.status {
			t.Fatalf("%s: status %d, want %d (%s)", s.name, code, s.status, body)
		}
		if s.ctype != "" && ctype != s.ctype {
			t.Errorf("%s: Content-Type %q, want %q", s.name, ctype, s.ctype)
		}
		if s.status == http.StatusConflict && s.ctype == "" && ctype == ContentTypeTlogSize {
			t.Errorf("%s: a root mismatch must not be answered as text/x.tlog.size (a client would retry)", s.name)
		}
		if s.body2 != "" && string(body) != s.body2 {
			t.Errorf("%s: body %q, want %q", s.name, body, s.body2)
		}
		if code != http.StatusOK {
			continue
		}
		// 200: signature lines that are cosignatures over the checkpoint by both keys.
		lines, err := SplitCosignatures(body)
		if err != nil || len(lines) != 2 {
			t.Fatalf("%s: response %q: %v", s.name, body, err)
		}
		r, _ := ParseRequest(s.body)
		for _, vk := range vkeys {
			v, err := fnote.NewVerifierForCosignatureV1(vk)
			if err != nil {
				t.Fatal(err)
			}
			n, err := note.Open(cosigned(r.Checkpoint, body), note.VerifierList(v))
			if err != nil || len(n.Sigs) != 1 {
				t.Fatalf("%s: cosignature by %s does not verify: %v", s.name, vk[:20], err)
			}
		}
	}

	// The monitor endpoint serves the latest cosigned checkpoint: size 20 of the main tree.
	id := OriginID(lg.origin)
	code, body := get(t, srv.URL+"/"+id+"/checkpoint")
	if code != http.StatusOK || !bytes.HasPrefix(body, lg.checkpoint(t, 20)[:len("log.test/a\n20\n")]) {
		t.Fatalf("monitor checkpoint: %d %q", code, body)
	}
	v, _ := fnote.NewVerifierForCosignatureV1(vkeys[0])
	lv, _ := note.NewVerifier(lg.vkey)
	if n, err := note.Open(body, note.VerifierList(v, lv)); err != nil || len(n.Sigs) != 2 {
		t.Fatalf("monitor checkpoint does not carry the log's signature and the cosignature: %v", err)
	}
	if code, _ := get(t, srv.URL+"/"+OriginID("nope")+"/checkpoint"); code != http.StatusNotFound {
		t.Errorf("unknown log checkpoint: %d", code)
	}

	// Kept: the split view, a proof of misbehaviour, and the faulty proof, kept but not one.
	code, body = get(t, srv.URL+"/"+id+"/forks")
	proofs, err := misbehaviour.ParseAll(body)
	if code != http.StatusOK || err != nil || len(proofs) != 2 {
		t.Fatalf("forks: %d, %d proofs, %v\n%s", code, len(proofs), err, body)
	}
	proven := map[string]bool{}
	for _, p := range proofs {
		proven[p.Kind] = misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{lg.vkey}}).Proven
	}
	want := map[string]bool{misbehaviour.KindSameSize: true, misbehaviour.KindInconsistent: false}
	if !maps.Equal(proven, want) {
		t.Fatalf("kept proofs, kind → proven: %v, want %v", proven, want)
	}
}

// TestTesseraPolicyAcceptsCosignatures checks the cosignatures against the tlog-policy
// evaluation Tessera's appender uses, and against ours.
func TestTesseraPolicyAcceptsCosignatures(t *testing.T) {
	lg := newTestLog(t, "log.test/a")
	lg.grow(7, "main")
	var srvs []*httptest.Server
	var vkeys []string
	var cps [][]byte
	for i := 0; i < 2; i++ {
		w, vk, st := newTestWitness(t, t.TempDir(), false, lg)
		defer st.Close()
		srv := httptest.NewServer(w.Handler())
		defer srv.Close()
		srvs, vkeys = append(srvs, srv), append(vkeys, vk[0])
		code, _, sigs := post(t, srv, lg.request(t, 0, 7))
		if code != http.StatusOK {
			t.Fatalf("witness %d: %d", i, code)
		}
		cps = append(cps, sigs)
	}
	// Both witness keys have the same name in this test; that is fine for note verification.
	pol := fmt.Sprintf("witness a %s %s\nwitness b %s %s\ngroup g 2 a b\nquorum g\n", vkeys[0], srvs[0].URL, vkeys[1], srvs[1].URL)
	tg, err := tessera.NewWitnessGroupFromPolicy([]byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := tlogpolicy.Parse([]byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	cp := lg.checkpoint(t, 7)
	for _, tc := range []struct {
		name string
		note []byte
		want bool
	}{
		{"none", cp, false},
		{"one", cosigned(cp, cps[0]), false},
		{"both", cosigned(cosigned(cp, cps[0]), cps[1]), true},
	} {
		if got := tg.Satisfied(tc.note); got != tc.want {
			t.Errorf("%s: tessera says %v, want %v", tc.name, got, tc.want)
		}
		if got := ours.Evaluate(tc.note, tlogpolicy.Freshness{}).Satisfied; got != tc.want {
			t.Errorf("%s: tlogpolicy.Evaluate says %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestConcurrentForkNeverCosigned races submissions from two forks of one log (each
// client learning the held size from 409 answers) and checks that the witness never
// cosigned checkpoints from both sides of the fork.
func TestConcurrentForkNeverCosigned(t *testing.T) {
	const common, extra = 8, 24
	a := newTestLog(t, "log.test/a")
	a.grow(common, "main")
	b := a.fork()
	a.grow(extra, "main")
	b.grow(extra, "evil")
	w, _, st := newTestWitness(t, t.TempDir(), false, a)
	defer st.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()

	var mu sync.Mutex
	cosignedBy := map[string][]uint64{} // branch → sizes cosigned beyond the common prefix
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		lg, branch := a, "a"
		if g%2 == 1 {
			lg, branch = b, "b"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var old uint64
			for size := uint64(1 + g); size <= common+extra; size += 3 {
				for attempt := 0; attempt < 5; attempt++ {
					if old > size {
						break
					}
					code, ct, body := post(t, srv, lg.request(t, old, size))
					if code == http.StatusConflict && ct == ContentTypeTlogSize {
						fmt.Sscanf(string(body), "%d", &old)
						continue
					}
					if code == http.StatusOK {
						old = size
						if size > common {
							mu.Lock()
							cosignedBy[branch] = append(cosignedBy[branch], size)
							mu.Unlock()
						}
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	if len(cosignedBy["a"]) > 0 && len(cosignedBy["b"]) > 0 {
		t.Fatalf("the witness cosigned both sides of a fork: a %v, b %v", cosignedBy["a"], cosignedBy["b"])
	}
	if len(cosignedBy["a"])+len(cosignedBy["b"]) == 0 {
		t.Fatal("nothing beyond the common prefix was cosigned: the test did not exercise the race")
	}
}

func TestStoreLock(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir); err == nil {
		t.Fatal("a second store on one directory was allowed")
	}
	s.Close()
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("lock not released on Close: %v", err)
	}
	s2.Close()
}
