package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/verifier"
)

// TestAdditionalSignerRotation rotates the log's additional checkpoint signer (the
// ML-DSA-44 one, --log-mldsa) end to end: the key history records each additional signer
// with role "additional" and its window, the retired one closed at the restart that
// replaced it; a bundle exported before the rotation verifies after it, post-quantum
// signatures required, and so does one exported after it.
func TestAdditionalSignerRotation(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Daemon, *httptest.Server) {
		d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, PostQuantum: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return d, httptest.NewServer(d.Handler())
	}
	const ws = "wsp_pq_rotate"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	ingest := func(srv *httptest.Server, recs [][]byte) []byte {
		arr := append([]byte("["), bytes.Join(recs, []byte(","))...)
		if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", append(arr, ']')); code != http.StatusCreated {
			t.Fatalf("ingest: %d %s", code, body)
		}
		if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil); code != http.StatusCreated {
			t.Fatalf("seal: %d %s", code, body)
		}
		code, zip := get(t, srv.URL+"/v1/export?chain="+ws)
		if code != http.StatusOK {
			t.Fatalf("export: %d", code)
		}
		return zip
	}
	verifyPQ := func(name, base string, zip []byte) { // pins the trust file evidentd at base publishes
		t.Helper()
		r, err := bundle.OpenZipBytes(zip)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := verifier.Verify(context.Background(), r, verifier.Options{RequirePQ: true, Trust: fetchTrust(t, base)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != verifier.Verified {
			for _, c := range rep.Checks {
				if c.Status != verifier.Verified {
					t.Logf("%s %s %s: %s", c.Name, c.Status, c.Code, c.Detail)
				}
			}
			t.Fatalf("%s: %s %+v", name, rep.Verdict, broken(rep))
		}
	}
	history := func(zip []byte) *bundle.KeyHistory {
		t.Helper()
		r, _ := bundle.OpenZipBytes(zip)
		hb, err := r.ReadFile(bundle.KeyHistoryFile, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		h, err := bundle.ParseKeyHistory(hb)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	additional := func(h *bundle.KeyHistory) []bundle.CheckpointKey {
		var out []bundle.CheckpointKey
		for _, c := range h.CheckpointKeys {
			if c.Role == bundle.RoleAdditional {
				out = append(out, c)
			}
		}
		return out
	}

	d, srv := open()
	pq1 := d.log.PostQuantumVerifierKey()
	before := ingest(srv, recs[:6])
	verifyPQ("before rotation", srv.URL, before)
	if add := additional(history(before)); len(add) != 1 || add[0].VKey != pq1 || add[0].NotAfter != "" {
		t.Fatalf("additional signers before rotation: %+v", add)
	}
	srv.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Rotate: the operator sets the ML-DSA-44 key aside; evidentd makes a new one at start.
	keys, _ := filepath.Glob(filepath.Join(dir, "keys", "*mldsa*"))
	if len(keys) == 0 {
		t.Fatal("no ML-DSA-44 key file in keys/")
	}
	for _, k := range keys { // the private key and its vkey, set aside deliberately
		if err := os.Rename(k, k+".retired"); err != nil {
			t.Fatal(err)
		}
	}
	d, srv = open()
	defer func() { srv.Close(); d.Close() }()
	pq2 := d.log.PostQuantumVerifierKey()
	if pq2 == "" || pq2 == pq1 {
		t.Fatalf("the additional signer was not rotated")
	}
	verifyPQ("exported before rotation, verified after", srv.URL, before)
	after := ingest(srv, recs[6:])
	verifyPQ("after rotation", srv.URL, after)
	add := additional(history(after))
	if len(add) != 2 || add[0].VKey != pq1 || add[0].NotAfter == "" || add[1].VKey != pq2 || add[1].NotAfter != "" || add[1].NotBefore < add[0].NotAfter {
		t.Fatalf("additional signers after rotation: %+v", add)
	}
}
