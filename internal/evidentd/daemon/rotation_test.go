package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/servicekey"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// verifyZip verifies a bundle with trust (fetchTrust) pinned.
func verifyZip(t *testing.T, trust *trustfile.File, zipBytes []byte) *verifier.Report {
	t.Helper()
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func broken(rep *verifier.Report) []verifier.Check {
	var out []verifier.Check
	for _, c := range rep.Checks {
		if c.Status == verifier.Broken {
			out = append(out, c)
		}
	}
	return out
}

// TestKeyRotationKeepsBundlesVerifying: a bundle exported before the service key is
// rotated verifies after it, and a bundle exported after it — whose first seal was signed
// by the retired key and whose receipts are signed by the new one — verifies too, with the
// key history in its trust files. The retired key stays in /.well-known/scitt-keys.
func TestKeyRotationKeepsBundlesVerifying(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Daemon, *httptest.Server) {
		d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return d, httptest.NewServer(d.Handler())
	}
	const ws = "wsp_rotate"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	ingest := func(srv *httptest.Server, recs [][]byte) {
		arr := append([]byte("["), bytes.Join(recs, []byte(","))...)
		if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", append(arr, ']')); code != http.StatusCreated {
			t.Fatalf("ingest: %d %s", code, body)
		}
		if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil); code != http.StatusCreated {
			t.Fatalf("seal: %d %s", code, body)
		}
	}

	d, srv := open()
	oldKID := d.service.Signer().KeyID()
	ingest(srv, recs[:6])
	code, before := get(t, srv.URL+"/v1/export?chain="+ws)
	if code != 200 {
		t.Fatalf("export: %d", code)
	}
	if rep := verifyZip(t, fetchTrust(t, srv.URL), before); rep.Verdict != verifier.Verified {
		t.Fatalf("bundle before rotation: %s %+v", rep.Verdict, broken(rep))
	}
	srv.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	old, nw, err := servicekey.Rotate(filepath.Join(dir, "keys", "service.key"), nil, servicekey.TypeP256, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if old == nw || old != hexs(oldKID) {
		t.Fatalf("rotate: old %s new %s (service had %x)", old, nw, oldKID)
	}

	d, srv = open()
	defer func() { srv.Close(); d.Close() }()
	if bytes.Equal(d.service.Signer().KeyID(), oldKID) {
		t.Fatal("the service still signs with the retired key")
	}
	// The bundle exported before the rotation still verifies.
	if rep := verifyZip(t, fetchTrust(t, srv.URL), before); rep.Verdict != verifier.Verified {
		t.Fatalf("bundle exported before rotation, verified after: %s %+v", rep.Verdict, broken(rep))
	}
	ingest(srv, recs[6:])
	code, after := get(t, srv.URL+"/v1/export?chain="+ws)
	if code != 200 {
		t.Fatalf("export: %d", code)
	}
	rep := verifyZip(t, fetchTrust(t, srv.URL), after)
	if rep.Verdict != verifier.Verified {
		t.Fatalf("bundle after rotation: %s %+v", rep.Verdict, broken(rep))
	}
	r, _ := bundle.OpenZipBytes(after)
	hb, err := r.ReadFile(bundle.KeyHistoryFile, 1<<20)
	if err != nil {
		t.Fatalf("key history in bundle: %v", err)
	}
	h, err := bundle.ParseKeyHistory(hb)
	if err != nil || len(h.Keys) != 2 || h.Keys[0].NotAfter == "" || h.Keys[1].NotAfter != "" || h.Keys[0].KID != old || h.Keys[1].KID != nw {
		t.Fatalf("key history %+v, %v", h, err)
	}
	keys := serviceKeys(t, srv.URL)
	if _, ok := keys[string(oldKID)]; !ok || len(keys) != 2 {
		t.Fatalf("scitt-keys lost the retired key (%d keys)", len(keys))
	}

	// A history whose retired key's window ends before the seal it signed is caught.
	bad := *h
	bad.Keys = append([]bundle.HistoryKey(nil), h.Keys...)
	bad.Keys[0].NotBefore = "2000-01-01T00:00:00Z"
	bad.Keys[0].NotAfter = "2000-01-02T00:00:00Z"
	if rep := verifyZip(t, fetchTrust(t, srv.URL), replaceFile(t, after, bundle.KeyHistoryFile, mustMarshal(t, &bad))); rep.Verdict != verifier.Broken {
		t.Fatalf("seal signed outside its key's window: verdict %s", rep.Verdict)
	}
}

func mustMarshal(t *testing.T, h *bundle.KeyHistory) []byte {
	b, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceFile rewrites a zip bundle with one file's content replaced and the manifest's
// digests recomputed (a producer that lies consistently, not a corrupted transfer).
func replaceFile(t *testing.T, zipBytes []byte, name string, data []byte) []byte {
	t.Helper()
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := bundle.NewWriter(&out)
	for _, f := range r.List("") {
		b, err := r.ReadFile(f, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		if f == name {
			b = data
		}
		if err := w.WriteFile(f, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(r.Manifest); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
