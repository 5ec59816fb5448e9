package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/veraison/go-cose"
)

// noRedirect is a loopback client that shows 3xx answers instead of following them.
var noRedirect = &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type answer struct {
	code   int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url, contentType string, body []byte) answer {
	t.Helper()
	resp, b := roundTrip(t, method, url, contentType, body)
	return answer{resp.StatusCode, resp.Header, b}
}

func writePolicy(t *testing.T, dir string, issuers ...*regpolicytest.Issuer) string {
	t.Helper()
	return regpolicytest.WritePolicy(t, dir, regpolicy.Policy{ContentTypes: []string{"application/spdx+json"}, RequiredClaims: []string{"iat"}}, issuers...)
}

func startSCITT(t *testing.T, dir string, cpi, wait time.Duration, policyFile string) (*Daemon, *httptest.Server) {
	t.Helper()
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: cpi,
		SCITT:  SCITT{RegistrationPolicy: policyFile, RegistrationWait: wait},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveUntilCleanup(t, d)
	return d, srv
}

// serviceKeys fetches /.well-known/scitt-keys and indexes its keys by RFC 9679 kid.
func serviceKeys(t *testing.T, base string) map[string]any {
	t.Helper()
	a := do(t, "GET", base+"/.well-known/scitt-keys", "", nil)
	if a.code != http.StatusOK || a.header.Get("Content-Type") != server.CBORType {
		t.Fatalf("scitt-keys: %d %s", a.code, a.header.Get("Content-Type"))
	}
	return testinfra.KeySet(t, a.body)
}

// TestSCRAPITwoIssuers: two external issuers register over HTTP; the one the policy does
// not list is refused with a concise problem detail, the other gets a receipt that
// verifies with the service's published key, and its registration names the policy.
func TestSCRAPITwoIssuers(t *testing.T) {
	dir := t.TempDir()
	builder := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmES256)
	scanner := regpolicytest.NewIssuer(t, "https://scanner.example", cose.AlgorithmEdDSA)
	d, srv := startSCITT(t, dir, 100*time.Millisecond, 10*time.Second, writePolicy(t, dir, builder))
	_, policyID := d.Registrar().Policy()
	if len(policyID) != 64 {
		t.Fatalf("policy id %q", policyID)
	}
	sbom := []byte(`{"spdxVersion":"SPDX-2.3","name":"app"}`)
	opts := regpolicytest.Options{Subject: "pkg:oci/app@sha256:1", ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()}
	keys := serviceKeys(t, srv.URL)

	good := builder.Sign(t, sbom, opts)
	a := do(t, "POST", srv.URL+"/entries", server.COSEType, good)
	if a.code != http.StatusCreated || a.header.Get("Content-Type") != "application/cose" {
		t.Fatalf("register: %d %s %x", a.code, a.header.Get("Content-Type"), a.body)
	}
	entry, _ := receipts.EntryHash(good)
	// Location is absolute (SCRAPI: a valid URL), built from the request's scheme and host.
	wantLoc := srv.URL + "/entries/" + hexs(entry[:])
	if a.header.Get("Location") != wantLoc {
		t.Fatalf("Location %q, want %q (absolute, content-addressed)", a.header.Get("Location"), wantLoc)
	}
	// The service never cuts a receipt from a one-leaf log (RFC 9942: no empty path).
	if r, err := receipts.ParseReceipt(a.body); err != nil || len(r.Inclusion) != 1 || r.Inclusion[0].TreeSize < 2 || len(r.Inclusion[0].Path) == 0 {
		t.Fatalf("receipt %+v, %v: want a non-empty inclusion path", r, err)
	}
	// Resolve Receipt: 200, application/cose, with the same Location.
	if g := do(t, "GET", wantLoc, "", nil); g.code != 200 || g.header.Get("Content-Type") != "application/cose" || !bytes.Equal(g.body, a.body) || g.header.Get("Location") != wantLoc {
		t.Fatalf("resolve receipt: %d %s %s", g.code, g.header.Get("Content-Type"), g.header.Get("Location"))
	}
	testinfra.VerifyReceipt(t, keys, good, a.body)
	reg, err := d.Registrar().Lookup(context.Background(), hexs(entry[:]))
	if err != nil || reg.PolicyID != policyID || reg.Issuer != builder.ISS {
		t.Fatalf("registration %+v, %v; want policy %s", reg, err, policyID)
	}

	// Registering the same statement again names the same entry; the Content-Type of
	// earlier drafts is still accepted.
	if again := do(t, "POST", srv.URL+"/entries", server.LegacyStatementType, good); again.code != http.StatusCreated || again.header.Get("Location") != wantLoc {
		t.Fatalf("again: %d %s", again.code, again.header.Get("Location"))
	}

	// The transparent statement carries the receipt(s) and the statement byte for byte.
	ts := do(t, "GET", wantLoc+"/statement", "", nil)
	if ts.code != 200 || ts.header.Get("Content-Type") != "application/cose" {
		t.Fatalf("transparent: %d", ts.code)
	}
	stmt, rcpts, err := receipts.SplitTransparent(ts.body)
	if err != nil || !bytes.Equal(stmt, good) || len(rcpts) == 0 {
		t.Fatalf("transparent statement: %v, %d receipts", err, len(rcpts))
	}
	for _, rc := range rcpts {
		testinfra.VerifyReceipt(t, keys, stmt, rc)
	}

	refusals := []struct {
		name   string
		stmt   []byte
		status int
		code   string
	}{
		{"issuer not in the policy", scanner.Sign(t, sbom, opts), http.StatusForbidden, regpolicy.CodeUnknownIssuer},
		{"content type not allowed", builder.Sign(t, sbom, regpolicytest.Options{Subject: "s", ContentType: "text/html", IssuedAt: 1}), http.StatusBadRequest, regpolicy.CodeContentType},
		{"bad signature", func() []byte { b := builder.Sign(t, sbom, opts); b[len(b)-2] ^= 0xff; return b }(), http.StatusBadRequest, regpolicy.CodeBadSignature},
		{"not COSE", []byte("hello"), http.StatusBadRequest, regpolicy.CodeMalformed},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, "POST", srv.URL+"/entries", server.COSEType, tc.stmt)
			if a.code != tc.status || a.header.Get("Content-Type") != server.ConciseProblemType {
				t.Fatalf("%d %s", a.code, a.header.Get("Content-Type"))
			}
			p, err := api.ParseConciseProblem(a.body)
			if err != nil || p.Code != tc.code || p.Title == "" || p.Detail == "" {
				t.Fatalf("problem %+v, %v; want code %s", p, err, tc.code)
			}
			t.Logf("refused: %s", p.Detail)
		})
	}
	if a := do(t, "GET", srv.URL+"/entries/"+hexs(make([]byte, 32)), "", nil); a.code != http.StatusNotFound || a.header.Get("Content-Type") != server.ConciseProblemType {
		t.Fatalf("unknown id: %d", a.code)
	}
	if a := do(t, "POST", srv.URL+"/entries", "application/json", good); a.code != http.StatusUnsupportedMediaType {
		t.Fatalf("json body: %d", a.code)
	}
	// One key of the key set by kid.
	for k := range keys {
		if a := do(t, "GET", srv.URL+"/.well-known/scitt-keys/"+hexs([]byte(k)), "", nil); a.code != 200 || a.header.Get("Content-Type") != "application/cbor" {
			t.Fatalf("key by kid: %d", a.code)
		}
	}
}

// TestSCRAPIAsync: with a slow checkpoint (2s) and a short wait (200ms), registration
// answers 202 Accepted with an absolute Location and Retry-After, the Location answers 204 No
// Content with Retry-After while pending, then 200 with a receipt that verifies
// (draft-ietf-scitt-scrapi-11 sections 2.3.2 and 2.4).
func TestSCRAPIAsync(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for 2s checkpoints")
	}
	dir := t.TempDir()
	is := regpolicytest.NewIssuer(t, "https://ps.example", cose.AlgorithmPS256)
	_, srv := startSCITT(t, dir, 2*time.Second, 200*time.Millisecond, writePolicy(t, dir, is))
	stmt := is.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3"}`), regpolicytest.Options{Subject: "pkg:x", ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()})
	a := do(t, "POST", srv.URL+"/entries", server.COSEType, stmt)
	if a.code != http.StatusAccepted || len(a.body) != 0 {
		t.Fatalf("POST: %d, want 202 with no body", a.code)
	}
	loc := a.header.Get("Location")
	ra, err := strconv.Atoi(a.header.Get("Retry-After"))
	if !strings.HasPrefix(loc, srv.URL+"/entries/") || err != nil || ra < 1 {
		t.Fatalf("Location %q Retry-After %q", loc, a.header.Get("Retry-After"))
	}
	first := do(t, "GET", loc, "", nil)
	if first.code != http.StatusNoContent || len(first.body) != 0 || first.header.Get("Retry-After") == "" || first.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("first GET: %d (Retry-After %q), want 204 No Content", first.code, first.header.Get("Retry-After"))
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		g := do(t, "GET", loc, "", nil)
		if g.code == http.StatusOK {
			testinfra.VerifyReceipt(t, serviceKeys(t, srv.URL), stmt, g.body)
			return
		}
		if g.code != http.StatusNoContent || time.Now().After(deadline) {
			t.Fatalf("GET: %d", g.code)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestConsistencyReceipts: consistency receipts between two sizes of the log and of a chain.
func TestConsistencyReceipts(t *testing.T) {
	dir := t.TempDir()
	is := regpolicytest.NewIssuer(t, "https://c.example", cose.AlgorithmEdDSA)
	d, srv := startSCITT(t, dir, 100*time.Millisecond, 10*time.Second, writePolicy(t, dir, is))
	for i := range 5 {
		stmt := is.Sign(t, []byte(`{"n":`+strconv.Itoa(i)+`}`), regpolicytest.Options{Subject: "s", ContentType: "application/spdx+json", IssuedAt: int64(1 + i)})
		if a := do(t, "POST", srv.URL+"/entries", server.COSEType, stmt); a.code != http.StatusCreated {
			t.Fatalf("register %d: %d", i, a.code)
		}
	}
	size, err := d.Log().Size(context.Background())
	if err != nil || size < 7 {
		t.Fatalf("log size %d, %v", size, err)
	}
	keys := serviceKeys(t, srv.URL)
	pub := keys[string(d.service.Signer().KeyID())]
	// Log: from 1 (the genesis entry alone) to every later size.
	e0, err := d.Log().Entry(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if g := scitt.GenesisEntry(d.Log().Origin()); !bytes.Equal(e0, g[:]) {
		t.Fatalf("log entry 0 is %x, want the genesis entry %x", e0, g)
	}
	root1 := receipts.LeafHash(e0)
	for to := uint64(2); to <= size; to++ {
		a := do(t, "GET", srv.URL+"/v1/log/consistency?from=1&to="+strconv.FormatUint(to, 10), "", nil)
		if a.code != 200 {
			t.Fatalf("log consistency 1..%d: %d %x", to, a.code, a.body)
		}
		if _, _, err := receipts.VerifyConsistency(a.body, root1[:], pub); err != nil {
			t.Fatalf("log consistency 1..%d: %v", to, err)
		}
	}
	for _, tc := range []struct{ path, code string }{
		{"/v1/log/consistency?from=3&to=2", string(api.CodeBadQuery)},
		{"/v1/log/consistency?from=2&to=2", string(api.CodeEmptyProof)},
		{"/v1/chains/wsp_cons/consistency?from=1&to=1", string(api.CodeEmptyProof)},
	} {
		a := do(t, "GET", srv.URL+tc.path, "", nil)
		p, err := api.ParseConciseProblem(a.body)
		if a.code != 400 || a.header.Get("Content-Type") != server.ConciseProblemType || err != nil || p.Code != tc.code {
			t.Fatalf("%s: %d %+v, want 400 %s", tc.path, a.code, p, tc.code)
		}
	}

	// Chain: a CHAP scenario, consistency between every pair of sizes.
	const ws = "wsp_cons"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	arr := append([]byte("["), bytes.Join(recs, []byte(","))...)
	if a := do(t, "POST", srv.URL+"/v1/chains/"+ws+"/entries", "application/json", append(arr, ']')); a.code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", a.code, a.body)
	}
	var links []ledger.Link
	a := do(t, "GET", srv.URL+"/v1/chains/"+ws+"/entries?limit=100", "", nil)
	var page struct {
		Entries []struct {
			Link ledger.Link `json:"link"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(a.body, &page); err != nil || len(page.Entries) != len(recs) {
		t.Fatalf("entries: %v (%d)", err, len(page.Entries))
	}
	for _, e := range page.Entries {
		links = append(links, e.Link)
	}
	n := uint64(len(links))
	for from := uint64(1); from <= n; from++ {
		tree := ledger.NewTree()
		for _, l := range links[:from] {
			tree.Append(l)
		}
		old := tree.Root()
		for to := from + 1; to <= n; to++ {
			a := do(t, "GET", srv.URL+"/v1/chains/"+ws+"/consistency?from="+strconv.FormatUint(from, 10)+"&to="+strconv.FormatUint(to, 10), "", nil)
			if a.code != 200 {
				t.Fatalf("chain consistency %d..%d: %d", from, to, a.code)
			}
			newRoot, r, err := receipts.VerifyConsistency(a.body, old[:], pub)
			if err != nil {
				t.Fatalf("chain consistency %d..%d: %v", from, to, err)
			}
			full := ledger.NewTree()
			for _, l := range links[:to] {
				full.Append(l)
			}
			if fr := full.Root(); !bytes.Equal(newRoot, fr[:]) || r.Claims.Subject != ws {
				t.Fatalf("chain consistency %d..%d: root or subject wrong", from, to)
			}
		}
	}
	if a := do(t, "GET", srv.URL+"/v1/chains/"+ws+"/consistency?from=1&to=999", "", nil); a.code != 400 {
		t.Fatalf("beyond chain: %d", a.code)
	}
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestSCRAPIPublicURL: with a configured public URL, Location is built from it, not from
// the request; a public URL that is not an absolute http(s) URL stops the start.
func TestSCRAPIPublicURL(t *testing.T) {
	dir := t.TempDir()
	is := regpolicytest.NewIssuer(t, "https://pub.example", cose.AlgorithmEdDSA)
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		SCITT:  SCITT{RegistrationPolicy: writePolicy(t, dir, is), RegistrationWait: 10 * time.Second, PublicURL: "https://ts.example/scitt/"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	stmt := is.Sign(t, []byte(`{}`), regpolicytest.Options{Subject: "s", ContentType: "application/spdx+json", IssuedAt: 1})
	entry, _ := receipts.EntryHash(stmt)
	a := do(t, "POST", srv.URL+"/entries", server.COSEType, stmt)
	if want := "https://ts.example/scitt/entries/" + hexs(entry[:]); a.code != http.StatusCreated || a.header.Get("Location") != want {
		t.Fatalf("%d Location %q, want %q", a.code, a.header.Get("Location"), want)
	}

	if _, err := Open(context.Background(), Config{Data: t.TempDir(), SCITT: SCITT{PublicURL: "ts.example/scitt"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil || !strings.Contains(err.Error(), "public URL") {
		t.Fatalf("relative public URL: %v", err)
	}
}
