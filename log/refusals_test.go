package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
	"github.com/evident-log/evident/witness"
)

// proofBody is a proof-of-misbehaviour file as a witness answers with it: two checkpoints
// of size 5 with other roots, signed by a log key made for the test.
func proofBody(t *testing.T) []byte {
	t.Helper()
	skey, _, err := note.GenerateKey(nil, "example.test/log")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	var cps [][]byte
	for _, root := range []byte{1, 2} {
		n, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: "example.test/log", Size: 5, Hash: bytes.Repeat([]byte{root}, 32)}.Marshal())}, s)
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, n)
	}
	p, err := misbehaviour.New(cps[0], cps[1], nil, "witness w1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRefusalWatcher posts add-checkpoint bodies through the witness client to a real HTTP
// witness answering each status tlog-witness defines: only a 409 that is not a size answer
// and a 422 are reported, with the witness's name, the URL, the body sent and the body
// answered (a proof answered is kept as Proof), and every answer reaches the caller
// unchanged, as does every request reach the witness.
func TestRefusalWatcher(t *testing.T) {
	proof := proofBody(t)
	type answer struct {
		status      int
		contentType []string
		body        []byte
	}
	var next answer
	var received []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received, _ = io.ReadAll(r.Body)
		for _, ct := range next.contentType {
			w.Header().Add("Content-Type", ct)
		}
		w.WriteHeader(next.status)
		w.Write(next.body)
	}))
	defer srv.Close()
	_, vkey, err := witness.GenerateKey("witness.test/w1", witness.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	var kept []*misbehaviour.Refusal
	hc, err := witnessClient(&WitnessConfig{
		Policy:    fmt.Appendf(nil, "witness w1 %s %s/w\nquorum w1\n", vkey, srv.URL),
		OnRefusal: func(r *misbehaviour.Refusal) { kept = append(kept, r) },
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := []byte("old 3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\nexample.test/log\n5\nAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n\n— example.test/log abcd\n")
	for _, tc := range []struct {
		name     string
		path     string
		buffered bool // a body the request cannot give again (no GetBody)
		answer
		refusal bool
	}{
		{"cosigned", "/w/add-checkpoint", false, answer{200, []string{"text/plain"}, []byte("— witness.test/w1 AAAA\n")}, false},
		{"size answer", "/w/add-checkpoint", false, answer{409, []string{tlogwitness.SizeContentType}, []byte("3\n")}, false},
		{"same size, other root, with a proof", "/w/add-checkpoint", false, answer{409, []string{"application/json"}, proof}, true},
		{"same size, other root, plain", "/w/add-checkpoint", true, answer{409, []string{"text/plain"}, []byte("root mismatch\n")}, true},
		{"size answer with a charset", "/w/add-checkpoint", false, answer{409, []string{tlogwitness.SizeContentType + "; charset=utf-8"}, []byte("3\n")}, true},
		{"two content types", "/w/add-checkpoint", false, answer{409, []string{tlogwitness.SizeContentType, "text/plain"}, []byte("3\n")}, true},
		{"consistency proof failed", "/w/add-checkpoint", true, answer{422, []string{"text/plain"}, []byte("bad proof\n")}, true},
		{"consistency proof failed, no body", "/w/add-checkpoint", false, answer{422, nil, nil}, true},
		{"unknown origin", "/w/add-checkpoint", false, answer{404, []string{"text/plain"}, []byte("no such log\n")}, false},
		{"no trusted signature", "/w/add-checkpoint", false, answer{403, []string{"text/plain"}, nil}, false},
		{"bad old size", "/w/add-checkpoint", false, answer{400, []string{"text/plain"}, nil}, false},
		{"a URL outside the policy", "/other/add-checkpoint", false, answer{422, []string{"text/plain"}, []byte("bad proof\n")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, received, kept = tc.answer, nil, nil
			var body io.Reader = bytes.NewReader(sent)
			if tc.buffered {
				body = io.NopCloser(bytes.NewReader(sent))
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if (req.GetBody == nil) != tc.buffered {
				t.Fatalf("GetBody set %v, want %v", req.GetBody != nil, !tc.buffered)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tc.status || !bytes.Equal(got, tc.body) {
				t.Fatalf("the caller got %d %q (%v), the witness answered %d %q", resp.StatusCode, got, err, tc.status, tc.body)
			}
			if !bytes.Equal(received, sent) {
				t.Fatalf("the witness received %q, sent %q", received, sent)
			}
			if !tc.refusal {
				if len(kept) != 0 {
					t.Fatalf("reported %d refusals of an answer that is none", len(kept))
				}
				return
			}
			if len(kept) != 1 {
				t.Fatalf("reported %d refusals, want 1", len(kept))
			}
			r := kept[0]
			if r.Format != misbehaviour.RefusalFormat || r.Witness != "w1" || r.URL != srv.URL+tc.path || r.Status != tc.status ||
				r.Request != string(sent) || r.Response != string(tc.body) {
				t.Fatalf("refusal %+v", r)
			}
			if (r.Proof != nil) != bytes.Equal(tc.body, proof) {
				t.Fatalf("refusal proof %v for the answer %q", r.Proof, tc.body)
			}
			if _, err := time.Parse(time.RFC3339, r.Observed); err != nil {
				t.Fatalf("observed %q: %v", r.Observed, err)
			}
		})
	}
}

// TestRefusalWatcherLargeAnswer: an answer longer than a refusal keeps reaches the caller
// whole; the refusal keeps its first misbehaviour.MaxResponse bytes.
func TestRefusalWatcherLargeAnswer(t *testing.T) {
	big := []byte(strings.Repeat("x", misbehaviour.MaxResponse*3+17))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write(big)
	}))
	defer srv.Close()
	_, vkey, err := witness.GenerateKey("witness.test/w1", witness.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	var kept []*misbehaviour.Refusal
	hc, err := witnessClient(&WitnessConfig{Policy: fmt.Appendf(nil, "witness w1 %s %s\nquorum w1\n", vkey, srv.URL),
		OnRefusal: func(r *misbehaviour.Refusal) { kept = append(kept, r) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post(srv.URL+"/add-checkpoint", "text/plain", strings.NewReader("old 0\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the caller got %d bytes (%v), the witness answered %d", len(got), err, len(big))
	}
	if len(kept) != 1 || kept[0].Response != string(big[:misbehaviour.MaxResponse]) {
		t.Fatalf("kept %d refusals", len(kept))
	}
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// failingReader fails every read.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read failed") }

// TestRefusalWatcherClosesBodyOnError: when the add-checkpoint body cannot be read again
// (GetBody fails, or what it gives fails), the watcher returns an error without posting and,
// as http.RoundTripper requires even on error, closes the request's body.
func TestRefusalWatcherClosesBodyOnError(t *testing.T) {
	var posted bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posted = true }))
	defer srv.Close()
	_, vkey, err := witness.GenerateKey("witness.test/w1", witness.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := witnessClient(&WitnessConfig{Policy: fmt.Appendf(nil, "witness w1 %s %s\nquorum w1\n", vkey, srv.URL),
		OnRefusal: func(*misbehaviour.Refusal) { t.Error("a refusal reported for a request never sent") }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		getBody func() (io.ReadCloser, error)
	}{
		{"GetBody fails", func() (io.ReadCloser, error) { return nil, errors.New("no body again") }},
		{"GetBody's body fails", func() (io.ReadCloser, error) { return io.NopCloser(failingReader{}), nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			posted = false
			body := &closeRecorder{Reader: strings.NewReader("old 0\n\n")}
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/add-checkpoint", body)
			if err != nil {
				t.Fatal(err)
			}
			req.GetBody = tc.getBody
			resp, err := hc.Transport.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("RoundTrip answered %d, want an error", resp.StatusCode)
			}
			if !body.closed {
				t.Errorf("the request body was not closed after %v", err)
			}
			if posted {
				t.Error("the request reached the witness")
			}
		})
	}
}

// mldsaProofBody is a proof-of-misbehaviour file as large as one a witness may answer with:
// its checkpoints and its references carry ML-DSA-44 cosignatures (2420-byte signatures).
func mldsaProofBody(t *testing.T) []byte {
	t.Helper()
	skey, _, err := note.GenerateKey(nil, "example.test/log")
	if err != nil {
		t.Fatal(err)
	}
	logSigner, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	signers := []note.Signer{logSigner}
	for i := range 3 {
		wkey, _, err := witness.GenerateKey(fmt.Sprintf("witness.test/w%d", i), witness.AlgMLDSA44)
		if err != nil {
			t.Fatal(err)
		}
		s, err := fnote.NewSignerForCosignatureV1(wkey)
		if err != nil {
			t.Fatal(err)
		}
		signers = append(signers, s)
	}
	sign := func(size uint64, root byte) []byte {
		n, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: "example.test/log", Size: size, Hash: bytes.Repeat([]byte{root}, 32)}.Marshal())}, signers...)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	p, err := misbehaviour.New(sign(20, 1), sign(20, 2), nil, "witness w1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for size := range uint64(misbehaviour.MaxReferences) {
		p.AddReference(sign(size+1, 3))
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRefusalAnswerKeepsLargeProof: the refusal watcher reads a witness's proof with ML-DSA-44
// signatures whole (a cut one is no proof), and the body it hands on stays byte-identical.
func TestRefusalAnswerKeepsLargeProof(t *testing.T) {
	proof := mldsaProofBody(t)
	if len(proof) <= 64<<10 {
		t.Fatalf("the proof is %d bytes, not larger than the 64 KiB the test is about", len(proof))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		w.Write(proof)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answered, err := refusalAnswer(resp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := misbehaviour.Parse(answered); err != nil || !bytes.Equal(answered, proof) {
		t.Fatalf("read %d of the %d bytes answered (%v)", len(answered), len(proof), err)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(rest, proof) {
		t.Fatalf("the body handed on is %d bytes (%v), the witness answered %d", len(rest), err, len(proof))
	}
}
