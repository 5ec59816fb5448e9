package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/verifier"
)

// startWitnessProcs builds ./cmd/evident-witness and runs n of them, each knowing the log
// and cosigning with Ed25519 and ML-DSA-44 (VKeys[0] and VKeys[1]). The processes are
// killed at cleanup.
func startWitnessProcs(t *testing.T, origin, logVKey string, n int) []testinfra.WitnessProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "evident-witness")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/evident-log/evident/cmd/evident-witness").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out []testinfra.WitnessProcess
	for i := 0; i < n; i++ {
		w := testinfra.StartWitness(t, bin, fmt.Sprintf("witness.test/p%d", i+1), origin, logVKey, "-mldsa-key", filepath.Join(t.TempDir(), "mldsa.key"))
		if len(w.VKeys) != 2 {
			t.Fatalf("print-vkeys: %q", w.VKeys)
		}
		out = append(out, w)
	}
	return out
}

// TestWitnessProcessesPostQuantum is the 2-of-2 acceptance test with real evident-witness
// processes: evidentd signs checkpoints Ed25519 + ML-DSA-44 (--log-mldsa), the policy names
// the witnesses' ML-DSA-44 keys, publication is fail-closed; two seals and an export later,
// the bundle verifies offline with post-quantum signatures required: the log's ML-DSA-44
// signature, the quorum met by ML-DSA-44 cosignatures alone, the chain consistency proof
// between the seals and the log consistency proof from the first seal's checkpoint.
func TestWitnessProcessesPostQuantum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs evident-witness")
	}
	dir := t.TempDir()
	_, vkey, err := log.LoadOrCreateKey(filepath.Join(dir, "keys"), DefaultOrigin)
	if err != nil {
		t.Fatal(err)
	}
	ws := startWitnessProcs(t, DefaultOrigin, vkey, 2)
	pol := fmt.Sprintf("witness p1 %s %s\nwitness p2 %s %s\ngroup both 2 p1 p2\nquorum both\n", ws[0].VKeys[1], ws[0].URL, ws[1].VKeys[1], ws[1].URL)
	pf := filepath.Join(dir, "witness.policy")
	if err := os.WriteFile(pf, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, PostQuantum: true,
		Witnesses: &Witnesses{PolicyFile: pf, Timeout: 5 * time.Second},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer func() {
		srv.Close()
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if d.Log().PostQuantumVerifierKey() == "" {
		t.Fatal("no post-quantum verifier key")
	}
	const chain = "wsp_pq_witnessed"
	b, _, err := chapscenario.SupportTriage(chain, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	for _, part := range [][][]byte{recs[:5], recs[5:]} {
		arr := append([]byte("["), bytes.Join(part, []byte(","))...)
		if code, body := post(t, srv.URL+"/v1/chains/"+chain+"/entries", "application/json", append(arr, ']')); code != http.StatusCreated {
			t.Fatalf("ingest: %d %s", code, body)
		}
		if code, body := post(t, srv.URL+"/v1/chains/"+chain+"/seal", "", nil); code != http.StatusCreated {
			t.Fatalf("seal: %d %s", code, body)
		}
	}
	code, zipBytes := get(t, srv.URL+"/v1/export?chain="+chain)
	if code != http.StatusOK {
		t.Fatalf("export: %d", code)
	}
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bundle.LogPQKeyFile, bundle.ChainConsistencyFile(bundle.ChainDir(chain), 0, 1)} {
		if _, listed := r.Manifest.Files[f]; !listed {
			t.Errorf("bundle lacks %s", f)
		}
	}
	if len(r.List("log/consistency/")) == 0 || len(r.List("log/checkpoints/")) < 2 {
		t.Errorf("bundle lacks the seal-time checkpoint and its consistency proof: %v %v", r.List("log/checkpoints/"), r.List("log/consistency/"))
	}
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{RequirePQ: true, Trust: fetchTrust(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verifier.Verified {
		t.Fatalf("verdict %s\n%s", rep.Verdict, reportText(rep))
	}
	for _, name := range []verifier.CheckName{"trust.log_pq_key", "log.pq_signature", "witness.quorum", "witness.pq_quorum", "chain.consistency", "log.consistency"} {
		if findCheck(rep, name, verifier.Verified) == nil {
			t.Errorf("no verified %s\n%s", name, reportText(rep))
		}
	}
	if c := findCheck(rep, "chain.consistency", verifier.Verified); c != nil && !strings.Contains(c.Detail, "1 by chain consistency proofs") {
		t.Errorf("chain.consistency: %s", c.Detail)
	}
}
