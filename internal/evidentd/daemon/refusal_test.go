package daemon

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/evidentd/refusals"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
	"github.com/evident-log/evident/witness"
)

// swappableWitness serves whichever real witness it currently points at, under one URL
// and one key: the witness that holds a forged checkpoint, then a fresh one (its operator
// dealt with the fork).
type swappableWitness struct {
	key string // the witness's key file, shared by every state
	h   atomic.Pointer[http.Handler]
	srv *httptest.Server
}

// startSwappable starts a witness of origin's log that knows logVKey, with fresh state.
func startSwappable(t *testing.T, logVKey string) (*swappableWitness, string) {
	t.Helper()
	sw := &swappableWitness{key: filepath.Join(t.TempDir(), "w.key")}
	_, vkey, err := witness.LoadOrCreateKey(sw.key, "witness.test/w1", witness.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	sw.fresh(t, logVKey)
	sw.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*sw.h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(sw.srv.Close)
	return sw, vkey
}

// fresh points sw at a witness with the same key and empty state.
func (sw *swappableWitness) fresh(t *testing.T, logVKey string) {
	t.Helper()
	s, _, err := witness.LoadOrCreateKey(sw.key, "witness.test/w1", witness.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	kl, err := witness.NewKnownLog(DefaultOrigin, logVKey)
	if err != nil {
		t.Fatal(err)
	}
	st, err := witness.OpenStore(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w, err := witness.New(witness.Options{Logs: []witness.KnownLog{kl}, Signers: []note.Signer{s}, Store: st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := w.Handler()
	sw.h.Store(&h)
}

// grownLog fills a new data directory's log (no witnesses) with a chain and padding until
// its size is not a power of two, and returns its log signer, verifier key and genuine
// checkpoint.
func grownLog(t *testing.T, dir, chain string) (note.Signer, string, *tlog.Checkpoint) {
	t.Helper()
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	ingestTriage(t, srv.URL, chain)
	srv.Close()
	for {
		n, err := d.Log().Size(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n > 2 && n&(n-1) != 0 {
			break
		}
		e := sha256.Sum256([]byte(fmt.Sprint("pad", n)))
		if _, _, err := d.Log().Append(context.Background(), e[:]); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := d.Log().Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	signer, vkey, err := log.LoadOrCreateKey(filepath.Join(dir, "keys"), DefaultOrigin)
	if err != nil {
		t.Fatal(err)
	}
	var cp tlog.Checkpoint
	if _, err := cp.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return signer, vkey, &cp
}

// forge makes the witness cosign a checkpoint of size n of another tree, signed with the
// log's real key: the witness now holds a history the log never had.
func forge(t *testing.T, sw *swappableWitness, signer note.Signer, n uint64) []byte {
	t.Helper()
	tree := testonly.New(rfc6962.DefaultHasher)
	for i := uint64(0); i < n; i++ {
		h := sha256.Sum256([]byte(fmt.Sprint("forged", i)))
		tree.AppendData(h[:])
	}
	forged := signAt(t, tree, n, signer)
	resp, err := http.Post(sw.srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader((&tlogwitness.Request{Checkpoint: forged}).Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the witness did not cosign the forged checkpoint: %d %s", resp.StatusCode, b)
	}
	return forged
}

// TestWitnessRefusalKept: a witness holding a forged checkpoint of the log's size (signed
// with the log's real key) refuses the genuine checkpoint evidentd sends it. evidentd keeps
// the refusal in <data>/misbehaviour with the genuine request it sent (consistent with its
// published tree) and, when the witness answered with a proof, a proof that
// misbehaviour.Check proves with the log's key; it logs the refusal at ERROR with the file,
// counts it in evident_witness_refusals_total, and loses nothing: fail-closed, the published
// checkpoint stays the genuine one and an append waits until the witness's operator replaces
// its state, then is published. At the next start evidentd warns of the kept refusal.
func TestWitnessRefusalKept(t *testing.T) {
	dir := t.TempDir()
	const chain = "wsp_refused"
	signer, logVKey, genuine := grownLog(t, dir, chain)
	sw, wvkey := startSwappable(t, logVKey)
	forged := forge(t, sw, signer, genuine.Size)

	pf := filepath.Join(dir, "witness.policy")
	if err := os.WriteFile(pf, fmt.Appendf(nil, "witness w1 %s %s\nquorum w1\n", wvkey, sw.srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		Witnesses: &Witnesses{PolicyFile: pf, Timeout: time.Second},
		Logger:    slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	closed := false
	t.Cleanup(func() {
		srv.Close()
		if !closed {
			sw.fresh(t, logVKey)
			d.Close()
		}
	})

	// Fail-closed: an append waits while the only witness refuses every checkpoint.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	e := sha256.Sum256([]byte("while the witness holds a fork"))
	_, _, err = d.Log().Append(ctx, e[:])
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append while the witness refuses (fail-closed): %v, want a deadline", err)
	}
	files := waitRefusals(t, filepath.Join(dir, refusals.Dir))
	t.Logf("%d refusals kept: %q", len(files), files)
	for _, f := range files {
		checkRefusal(t, f, sw.srv.URL+"/add-checkpoint", logVKey, genuine, forged)
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "the refusal is kept in "+f) {
			t.Fatalf("no ERROR line names %s:\n%s", f, logs.String())
		}
	}
	if n := refusalsCounted(t, srv.URL); n < float64(len(files)) {
		t.Fatalf("evident_witness_refusals_total{witness=\"w1\"} = %v, %d refusals kept", n, len(files))
	}

	// Nothing acknowledged is lost: the published checkpoint is still the genuine one.
	code, raw := get(t, srv.URL+"/log/checkpoint")
	cp, err := log.VerifyCheckpoint(raw, logVKey)
	if code != http.StatusOK || err != nil || cp.Size != genuine.Size || !bytes.Equal(cp.Hash, genuine.Hash) {
		t.Fatalf("published checkpoint during the refusal: %d %v\n%s", code, err, raw)
	}
	if code, body := get(t, srv.URL+"/v1/chains/"+chain); code != http.StatusOK {
		t.Fatalf("chain head during the refusal: %d %s", code, body)
	}

	// The witness's operator replaces its state: publication resumes with the waiting entry.
	sw.fresh(t, logVKey)
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	idx, published, err := d.Log().Append(ctx, e[:])
	cancel()
	if err != nil || idx < genuine.Size || strings.Count(string(published), "\n— ") != 2 {
		t.Fatalf("after the witness was replaced: index %d, %v\n%s", idx, err, published)
	}
	srv.Close()
	closed = true
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// The next start warns of the kept refusals.
	var logs2 syncBuffer
	d2, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs2, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if want := fmt.Sprintf("holds %d refusals", len(files)); !strings.Contains(logs2.String(), "level=WARN") || !strings.Contains(logs2.String(), want) {
		t.Fatalf("start with %d kept refusals: no WARN %q:\n%s", len(files), want, logs2.String())
	}
}

// waitRefusals waits for refusal files in dir and returns them.
func waitRefusals(t *testing.T, dir string) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) > 0 {
			return files
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refusal kept in %s", dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkRefusal checks a kept refusal: the witness and URL of the policy, a refusal status,
// the genuine checkpoint evidentd sent (of the genuine tree: the same root at the held size,
// or a consistency proof from it), and, when the witness answered with JSON, a proof of
// misbehaviour that Check proves with the log's key over the forged checkpoint.
func checkRefusal(t *testing.T, file, url, logVKey string, genuine *tlog.Checkpoint, forged []byte) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := misbehaviour.ParseRefusal(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if r.Witness != "w1" || r.URL != url || (r.Status != http.StatusConflict && r.Status != http.StatusUnprocessableEntity) {
		t.Fatalf("%s: witness %q, url %q, status %d", file, r.Witness, r.URL, r.Status)
	}
	req, err := tlogwitness.ParseRequest([]byte(r.Request))
	if err != nil {
		t.Fatalf("%s: the request kept: %v", file, err)
	}
	v, err := note.NewVerifier(logVKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(req.Checkpoint, note.VerifierList(v))
	if err != nil {
		t.Fatalf("%s: the checkpoint sent does not verify with the log key: %v", file, err)
	}
	var sent tlog.Checkpoint
	if _, err := sent.Unmarshal([]byte(n.Text)); err != nil {
		t.Fatal(err)
	}
	switch {
	case sent.Size == genuine.Size:
		if !bytes.Equal(sent.Hash, genuine.Hash) {
			t.Fatalf("%s: evidentd sent a checkpoint of size %d with another root than it published", file, sent.Size)
		}
	case req.OldSize != genuine.Size || misbehaviour.Consistency(genuine.Size, sent.Size, req.Proof, genuine.Hash, sent.Hash) != misbehaviour.Consistent:
		t.Fatalf("%s: evidentd sent size %d from %d with a proof that does not extend its published tree %d", file, sent.Size, req.OldSize, genuine.Size)
	}
	if r.Proof == nil { // evident-witness answers a refusal with its proof
		t.Fatalf("%s: the witness's answer is not a proof of misbehaviour:\n%s", file, r.Response)
	}
	res := misbehaviour.Check(r.Proof, misbehaviour.Keys{LogKeys: []string{logVKey}})
	if !res.Proven {
		t.Fatalf("%s: the witness's proof is not proven: %s", file, res.Reason)
	}
	var fc tlog.Checkpoint
	fc.Unmarshal(forged)
	if res.Sides[0].Size != genuine.Size || !bytes.Equal(res.Sides[0].Root, fc.Hash) && !bytes.Equal(res.Sides[1].Root, fc.Hash) {
		t.Fatalf("%s: the proof is not over the forged checkpoint: %+v", file, res.Sides)
	}
}

// refusalsCounted is evident_witness_refusals_total{witness="w1"} summed over kinds, as
// GET /metrics serves it.
func refusalsCounted(t *testing.T, base string) float64 {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("metrics: %d", code)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "evident_witness_refusals_total{") || !strings.Contains(l, `witness="w1"`) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", l, err)
		}
		sum += v
	}
	return sum
}
