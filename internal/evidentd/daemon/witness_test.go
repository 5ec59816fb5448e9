package daemon

import (
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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/witness"
)

// testWitness is a real evident-witness (state on disk) on loopback that can be taken down.
type testWitness struct {
	w    *witness.Witness
	srv  *httptest.Server
	vkey string
	down atomic.Bool
}

func startWitnesses(t *testing.T, origin, logVKey string, n int) []*testWitness {
	t.Helper()
	var out []*testWitness
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		s, vkey, err := witness.LoadOrCreateKey(filepath.Join(dir, "w.key"), fmt.Sprintf("witness.test/w%d", i+1), witness.AlgEd25519)
		if err != nil {
			t.Fatal(err)
		}
		kl, err := witness.NewKnownLog(origin, logVKey)
		if err != nil {
			t.Fatal(err)
		}
		st, err := witness.OpenStore(filepath.Join(dir, "state"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		w, err := witness.New(witness.Options{Logs: []witness.KnownLog{kl}, Signers: []note.Signer{s}, Store: st,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		tw := &testWitness{w: w, vkey: vkey}
		h := w.Handler()
		tw.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if tw.down.Load() {
				http.Error(rw, "down", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(rw, r)
		}))
		t.Cleanup(tw.srv.Close)
		out = append(out, tw)
	}
	return out
}

// startWitnessed opens evidentd with a 2-of-2 witness policy over two fresh witnesses.
func startWitnessed(t *testing.T, failOpen bool, downAtStart bool) (*Daemon, *httptest.Server, []*testWitness, note.Signer) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	signer, vkey, err := log.LoadOrCreateKey(filepath.Join(dir, "keys"), DefaultOrigin)
	if err != nil {
		t.Fatal(err)
	}
	ws := startWitnesses(t, DefaultOrigin, vkey, 2)
	ws[1].down.Store(downAtStart)
	pol := fmt.Sprintf("witness w1 %s %s\nwitness w2 %s %s\ngroup both 2 w1 w2\nquorum both\n", ws[0].vkey, ws[0].srv.URL, ws[1].vkey, ws[1].srv.URL)
	pf := filepath.Join(dir, "witness.policy")
	if err := os.WriteFile(pf, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		Witnesses: &Witnesses{PolicyFile: pf, FailOpen: failOpen, Timeout: time.Second},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		for _, w := range ws {
			w.down.Store(false) // let Close publish its last checkpoint
		}
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d, srv, ws, signer
}

func ingestTriage(t *testing.T, base, ws string) {
	t.Helper()
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	arr := append([]byte("["), bytes.Join(recs, []byte(","))...)
	if code, body := post(t, base+"/v1/chains/"+ws+"/entries", "application/json", append(arr, ']')); code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
}

func reportText(rep *verifier.Report) string {
	var buf bytes.Buffer
	rep.WriteText(&buf)
	return buf.String()
}

func findCheck(rep *verifier.Report, name verifier.CheckName, status verifier.Status) *verifier.Check {
	for i, c := range rep.Checks {
		if c.Name == name && c.Status == status {
			return &rep.Checks[i]
		}
	}
	return nil
}

// verifyWitnessedZip verifies a bundle with trust (fetchTrust) pinned.
func verifyWitnessedZip(t *testing.T, trust *trustfile.File, zipBytes []byte, extra ...verifier.ExtraCheckpoint) *verifier.Report {
	t.Helper()
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Checkpoints: extra, Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestWitnessedFailClosed: 2-of-2 quorum met → receipts verify offline with the quorum;
// one witness down → publication stops; a forking log is refused by the witness and
// reported by the verifier.
func TestWitnessedFailClosed(t *testing.T) {
	d, srv, ws, logSigner := startWitnessed(t, false, false)
	const chain = "wsp_witnessed"
	ingestTriage(t, srv.URL, chain)
	code, body := post(t, srv.URL+"/v1/chains/"+chain+"/seal", "", nil)
	if code != http.StatusCreated {
		t.Fatalf("seal: %d %s", code, body)
	}
	// Make the tree size not a power of two, so the inconsistent-pair proof below binds the old root.
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
	code, zipBytes := get(t, srv.URL+"/v1/export?chain="+chain)
	if code != http.StatusOK {
		t.Fatalf("export: %d", code)
	}
	rep := verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes)
	if rep.Verdict == verifier.Broken || findCheck(rep, "witness.quorum", verifier.Verified) == nil || findCheck(rep, "witness.quorum", verifier.NotEvaluated) != nil {
		t.Fatalf("witnessed bundle: verdict %s\n%s", rep.Verdict, reportText(rep))
	}
	// Checked last so the fork checks below run even if another check of the bundle is
	// not evaluated: the witnessed bundle verifies outright.
	defer func() {
		if rep0 := verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes); rep0.Verdict != verifier.Verified {
			t.Errorf("witnessed bundle: verdict %s, want verified\n%s", rep0.Verdict, reportText(rep0))
		}
	}()
	zr, _ := bundle.OpenZipBytes(zipBytes)
	cps := zr.List("log/checkpoints/") // the seals' first checkpoints, then the latest (names sort by size)
	cpName := cps[len(cps)-1]
	cpRaw, err := zr.ReadFile(cpName, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(cpRaw), "\n— "); got != 3 {
		t.Fatalf("exported checkpoint has %d signature lines, want the log's and two cosignatures:\n%s", got, cpRaw)
	}
	// A checkpoint whose cosignature by a policy witness was altered is evidence of tampering.
	lines := strings.Split(string(cpRaw), "\n")
	altered := false
	for i, l := range lines {
		if strings.HasPrefix(l, "— ") && !strings.HasPrefix(l, "— "+d.Log().Origin()+" ") && !altered {
			b := []byte(l)
			j := len(b) - 12 // inside the signature bytes, away from the base64 padding
			if b[j] == 'A' {
				b[j] = 'B'
			} else {
				b[j] = 'A'
			}
			lines[i], altered = string(b), true
		}
	}
	badRep := verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes, verifier.ExtraCheckpoint{Name: "altered.checkpoint", Data: []byte(strings.Join(lines, "\n"))})
	if c := findCheck(badRep, "witness.cosignature", verifier.Broken); !altered || c == nil || c.Code != verifier.CodeCosignatureInvalid {
		t.Fatalf("altered cosignature not reported broken:\n%s", reportText(badRep))
	}

	// One witness down: the next checkpoint cannot get its quorum and is not published.
	ws[1].down.Store(true)
	before, _ := d.Log().Size(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	e := sha256.Sum256([]byte("while a witness is down"))
	_, _, err = d.Log().Append(ctx, e[:])
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append with the quorum unreachable (fail-closed): err %v, want a deadline", err)
	}
	if after, _ := d.Log().Size(context.Background()); after != before {
		t.Fatalf("fail-closed published a checkpoint of size %d without the quorum (was %d)", after, before)
	}
	// Back up: publication resumes.
	ws[1].down.Store(false)
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	_, cp, err := d.Log().Append(ctx, e[:])
	cancel()
	if err != nil || strings.Count(string(cp), "\n— ") != 3 {
		t.Fatalf("after the witness came back: %v\n%s", err, cp)
	}

	// A forking log, signed with the real log key. Split view: the bundle's size, another root.
	var held tlog.Checkpoint
	if _, err := held.Unmarshal(cpRaw); err != nil {
		t.Fatal(err)
	}
	fork := testonly.New(rfc6962.DefaultHasher)
	for i := uint64(0); i < held.Size+4; i++ {
		h := sha256.Sum256([]byte(fmt.Sprint("evil", i)))
		fork.AppendData(h[:])
	}
	sign := func(size uint64) []byte {
		b, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: DefaultOrigin, Size: size, Hash: fork.HashAt(size)}.Marshal())}, logSigner)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sameSize := sign(held.Size)
	latest, _ := d.Log().Size(context.Background())
	// The witnesses hold the log's latest checkpoint; show them a fork of that size and a
	// larger fork with a proof from it.
	var bigger tlog.Checkpoint
	bigger.Unmarshal(cp)
	// Each refusal answers with a proof of misbehaviour that the log's published key proves
	// (the inconsistent one only when the held size is not a power of two: then its root is
	// part of the consistency proof), and the witness keeps both.
	logKeys := misbehaviour.Keys{LogKeys: fetchTrust(t, srv.URL).LogKeys}
	p, _ := fork.ConsistencyProof(latest, latest+2)
	refusals := []struct {
		body   []byte
		status int
		proven bool
	}{
		{(&witness.Request{OldSize: latest, Checkpoint: signAt(t, fork, latest, logSigner)}).Marshal(), http.StatusConflict, true},
		{(&witness.Request{OldSize: latest, Proof: p, Checkpoint: signAt(t, fork, latest+2, logSigner)}).Marshal(), http.StatusUnprocessableEntity, latest&(latest-1) != 0},
	}
	for _, tw := range ws {
		for _, r := range refusals {
			code, answer := post(t, tw.srv.URL+"/add-checkpoint", "text/plain", r.body)
			proof, err := misbehaviour.Parse(answer)
			if code != r.status || err != nil {
				t.Fatalf("fork: witness answered %d (%v), want %d with a proof of misbehaviour\n%s", code, err, r.status, answer)
			}
			if res := misbehaviour.Check(proof, logKeys); res.Proven != r.proven {
				t.Fatalf("fork of size %d, HTTP %d: proven %v (%s), want %v", latest, code, res.Proven, res.Reason, r.proven)
			}
		}
		kept, err := tw.w.Forks(witness.OriginID(DefaultOrigin))
		if err != nil || len(kept) != 2 {
			t.Fatalf("proofs of misbehaviour kept: %d, %v", len(kept), err)
		}
	}

	// The verifier, given the forked checkpoints gathered elsewhere.
	rep = verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes, verifier.ExtraCheckpoint{Name: "split.checkpoint", Data: sameSize})
	fc := findCheck(rep, "log.fork", verifier.Broken)
	if rep.Verdict != verifier.Broken || fc == nil || len(fc.Evidence) != 2 || !strings.Contains(strings.Join(fc.Evidence, " "), "split.checkpoint") {
		t.Fatalf("split view not reported as broken with both checkpoints:\n%s", reportText(rep))
	}
	p, _ = fork.ConsistencyProof(held.Size, held.Size+3)
	body = (&witness.Request{OldSize: held.Size, Proof: p, Checkpoint: sign(held.Size + 3)}).Marshal()
	rep = verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes, verifier.ExtraCheckpoint{Name: "inconsistent.body", Data: body})
	ic := findCheck(rep, "log.consistency", verifier.Broken)
	if rep.Verdict != verifier.Broken || ic == nil || len(ic.Evidence) != 2 {
		t.Fatalf("inconsistent pair not reported as broken with both checkpoints:\n%s", reportText(rep))
	}
	// And the honest checkpoint with its real proof is shown consistent.
	rp, err := d.Log().ConsistencyProof(context.Background(), held.Size, bigger.Size)
	if err != nil {
		t.Fatal(err)
	}
	body = (&witness.Request{OldSize: held.Size, Proof: rp, Checkpoint: cp}).Marshal()
	rep = verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes, verifier.ExtraCheckpoint{Name: "honest.body", Data: body})
	if findCheck(rep, "log.consistency", verifier.Verified) == nil || rep.Verdict == verifier.Broken {
		t.Fatalf("honest later checkpoint:\n%s", reportText(rep))
	}
}

func signAt(t *testing.T, tree *testonly.Tree, size uint64, s note.Signer) []byte {
	t.Helper()
	b, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: DefaultOrigin, Size: size, Hash: tree.HashAt(size)}.Marshal())}, s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWitnessedFailOpen: with one witness down, fail-open publishes, and the verifier
// reports the unmet quorum as not evaluated (nothing broken).
func TestWitnessedFailOpen(t *testing.T) {
	_, srv, _, _ := startWitnessed(t, true, true)
	const chain = "wsp_failopen"
	ingestTriage(t, srv.URL, chain)
	code, body := post(t, srv.URL+"/v1/chains/"+chain+"/seal", "", nil)
	if code != http.StatusCreated {
		t.Fatalf("fail-open seal: %d %s", code, body)
	}
	code, zipBytes := get(t, srv.URL+"/v1/export?chain="+chain)
	if code != http.StatusOK {
		t.Fatalf("export: %d", code)
	}
	rep := verifyWitnessedZip(t, fetchTrust(t, srv.URL), zipBytes)
	q := findCheck(rep, "witness.quorum", verifier.NotEvaluated)
	if rep.Verdict != verifier.NotEvaluated || q == nil || q.Code != verifier.CodeQuorumUnmet || !strings.Contains(strings.Join(q.Evidence, " "), "w1") {
		t.Fatalf("fail-open bundle: verdict %s\n%s", rep.Verdict, reportText(rep))
	}
	// Nothing is broken, and every seal and checkpoint still verifies.
	for _, c := range rep.Checks {
		if c.Status == verifier.Broken || (c.Status != verifier.Verified && (c.Name == "seals" || c.Name == "log.checkpoint")) {
			t.Errorf("unexpected %s check %s: %s", c.Status, c.Name, c.Detail)
		}
	}
}
