package witness

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// testLog is a real Merkle tree with a real signed-note key: what a log shows a witness.
type testLog struct {
	origin string
	signer note.Signer
	vkey   string
	tree   *testonly.Tree
}

func newTestLog(t testing.TB, origin string) *testLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{origin: origin, signer: s, vkey: vkey, tree: testonly.New(rfc6962.DefaultHasher)}
}

// grow appends n leaves whose content depends on tag (two logs grown with different tags fork).
func (l *testLog) grow(n int, tag string) {
	for i := 0; i < n; i++ {
		h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", tag, l.tree.Size())))
		l.tree.AppendData(h[:])
	}
}

// fork returns a copy of the log (same key) with the same leaves so far.
func (l *testLog) fork() *testLog {
	c := &testLog{origin: l.origin, signer: l.signer, vkey: l.vkey, tree: testonly.New(rfc6962.DefaultHasher)}
	for i := uint64(0); i < l.tree.Size(); i++ {
		c.tree.Append(l.tree.LeafHash(i))
	}
	return c
}

func (l *testLog) checkpoint(t testing.TB, size uint64) []byte {
	t.Helper()
	cp := tlog.Checkpoint{Origin: l.origin, Size: size, Hash: l.tree.HashAt(size)}
	b, err := note.Sign(&note.Note{Text: string(cp.Marshal())}, l.signer)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (l *testLog) request(t testing.TB, old, size uint64) []byte {
	t.Helper()
	r := &Request{OldSize: old, Checkpoint: l.checkpoint(t, size)}
	if old > 0 && old < size {
		p, err := l.tree.ConsistencyProof(old, size)
		if err != nil {
			t.Fatal(err)
		}
		r.Proof = p
	}
	return r.Marshal()
}

// newTestWitness starts a witness over a fresh state directory for the given logs.
func newTestWitness(t testing.TB, dir string, mldsa bool, logs ...*testLog) (*Witness, []string, *Store) {
	t.Helper()
	return newLoggedWitness(t, dir, mldsa, slog.New(slog.DiscardHandler), logs...)
}

// newLoggedWitness is newTestWitness with the witness's log going to logger.
func newLoggedWitness(t testing.TB, dir string, mldsa bool, logger *slog.Logger, logs ...*testLog) (*Witness, []string, *Store) {
	t.Helper()
	s, v, err := LoadOrCreateKey(dir+"/witness.key", "witness.test/w1", AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	signers, vkeys := []note.Signer{s}, []string{v}
	if mldsa {
		s2, v2, err := LoadOrCreateKey(dir+"/witness-mldsa.key", "witness.test/w1", AlgMLDSA44)
		if err != nil {
			t.Fatal(err)
		}
		signers, vkeys = append(signers, s2), append(vkeys, v2)
	}
	var kl []KnownLog
	for _, l := range logs {
		k, err := NewKnownLog(l.origin, l.vkey)
		if err != nil {
			t.Fatal(err)
		}
		kl = append(kl, k)
	}
	st, err := OpenStore(dir + "/state")
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Logs: kl, Signers: signers, Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return w, vkeys, st
}

func post(t testing.TB, srv *httptest.Server, body []byte) (int, string, []byte) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b.Bytes()
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

// cosigned appends response signature lines to a checkpoint.
func cosigned(cp, sigs []byte) []byte {
	return append(append([]byte(nil), cp...), sigs...)
}
