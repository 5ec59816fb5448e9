package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/evident-log/evident/servicekey"
	"github.com/evident-log/evident/verifier"
	"github.com/veraison/go-cose"
)

func checkNamed(rep *verifier.Report, name verifier.CheckName) *verifier.Check {
	for i := range rep.Checks {
		if rep.Checks[i].Name == name {
			return &rep.Checks[i]
		}
	}
	return nil
}

func exportRegistrations(t *testing.T, base, sel string) []byte {
	t.Helper()
	code, b := get(t, base+"/v1/export?registrations="+url.QueryEscape(sel))
	if code != http.StatusOK {
		t.Fatalf("export registrations=%s: %d %s", sel, code, b)
	}
	return b
}

func scittIndex(t *testing.T, zipBytes []byte) *bundle.SCITTIndex {
	t.Helper()
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.ReadFile(bundle.SCITTIndexFile, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	x, err := bundle.ParseSCITTIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestSCITTExportReplaysPolicies (RFC 9943 replayability): statements registered under
// policy v1 (two issuers) and, after a service key rotation, under policy v2 (which
// forbids the second issuer) are exported with every policy statement; the offline
// verifier replays every registration against the policy in force at its position in the
// log, so the second issuer's statement stays valid after v2 forbids it. A bundle exported
// before the rotation and the policy change verifies after them. An operator who records a
// statement under a policy that refuses it, or names a policy not yet in force, is caught.
func TestSCITTExportReplaysPolicies(t *testing.T) {
	dir := t.TempDir()
	builder := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmES256)
	scanner := regpolicytest.NewIssuer(t, "https://scanner.example", cose.AlgorithmEdDSA)
	sbom := []byte(`{"spdxVersion":"SPDX-2.3","name":"app"}`)
	opts := regpolicytest.Options{Subject: "pkg:oci/app@sha256:1", ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()}
	register := func(base string, stmt []byte, want int) {
		t.Helper()
		if a := do(t, "POST", base+"/entries", server.COSEType, stmt); a.code != want {
			t.Fatalf("register: %d, want %d (%x)", a.code, want, a.body)
		}
	}

	// Policy v1 admits both issuers.
	pol1 := writePolicy(t, t.TempDir(), builder, scanner)
	d, srv := startSCITT(t, dir, 100*time.Millisecond, 10*time.Second, pol1)
	_, v1 := d.Registrar().Policy()
	register(srv.URL, builder.Sign(t, sbom, opts), http.StatusCreated)
	scannerStmt := scanner.Sign(t, sbom, opts)
	register(srv.URL, scannerStmt, http.StatusCreated)
	before := exportRegistrations(t, srv.URL, "all")
	rep := verifyZip(t, fetchTrust(t, srv.URL), before)
	if rep.Verdict != verifier.Verified {
		t.Fatalf("export under v1: %s %+v", rep.Verdict, broken(rep))
	}
	if c := checkNamed(rep, "scitt.registrations"); c == nil || c.Status != verifier.Verified {
		t.Fatalf("no verified scitt.registrations check: %+v", rep.Checks)
	}
	srv.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Rotate the service key, then put policy v2 (builder only) in force.
	if _, _, err := servicekey.Rotate(filepath.Join(dir, "keys", "service.key"), nil, servicekey.TypeP256, time.Now()); err != nil {
		t.Fatal(err)
	}
	pol2 := writePolicy(t, t.TempDir(), builder)
	d2, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		SCITT: SCITT{RegistrationPolicy: pol2, RegistrationWait: 10 * time.Second}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(d2.Handler())
	defer func() { srv2.Close(); d2.Close() }()
	_, v2 := d2.Registrar().Policy()
	if v2 == v1 {
		t.Fatal("policy v2 was not put in force")
	}
	register(srv2.URL, builder.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3","name":"v2"}`), opts), http.StatusCreated)
	register(srv2.URL, scanner.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3","name":"late"}`), opts), http.StatusForbidden)

	if rep := verifyZip(t, fetchTrust(t, srv2.URL), before); rep.Verdict != verifier.Verified {
		t.Fatalf("bundle exported before the rotation and policy v2, verified after: %s %+v", rep.Verdict, broken(rep))
	}
	after := exportRegistrations(t, srv2.URL, "all")
	rep = verifyZip(t, fetchTrust(t, srv2.URL), after)
	if rep.Verdict != verifier.Verified {
		t.Fatalf("export after v2: %s %+v", rep.Verdict, broken(rep))
	}
	x := scittIndex(t, after)
	if len(x.Policies) != 2 || x.Policies[0].ID != v1 || x.Policies[1].ID != v2 || len(x.Statements) != 3 {
		t.Fatalf("index: %d policies, %d statements", len(x.Policies), len(x.Statements))
	}
	if x.Policies[0].InForce.UntilIndex == nil || *x.Policies[0].InForce.UntilIndex != x.Policies[1].LogIndex || x.Policies[1].InForce.UntilIndex != nil {
		t.Fatalf("in-force intervals: %+v %+v", x.Policies[0].InForce, x.Policies[1].InForce)
	}
	scannerEntry, _ := receipts.EntryHash(scannerStmt)
	var scannerIdx int = -1
	for i, s := range x.Statements {
		if s.ID == hexs(scannerEntry[:]) {
			scannerIdx = i
			if s.Policy != v1 || s.Issuer != scanner.ISS {
				t.Fatalf("scanner's registration: %+v", s)
			}
		}
	}
	if scannerIdx < 0 {
		t.Fatal("the scanner's statement is not exported")
	}

	// One issuer's registrations only.
	only := scittIndex(t, exportRegistrations(t, srv2.URL, scanner.ISS))
	if len(only.Statements) != 1 || only.Statements[0].Issuer != scanner.ISS || len(only.Policies) != 2 {
		t.Fatalf("registrations=%s: %+v", scanner.ISS, only)
	}

	// Lies the verifier must catch.
	idxBytes := func(mut func(*bundle.SCITTIndex)) []byte {
		y := scittIndex(t, after)
		mut(y)
		b, err := json.Marshal(y)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r, _ := bundle.OpenZipBytes(after)
	pol0, _ := r.ReadFile(bundle.SCITTPolicyFile(0), 1<<20)
	for _, tc := range []struct {
		name     string
		file     string
		data     []byte
		check    verifier.CheckName
		wantCode verifier.Code
	}{
		{"registration moved to a later policy", bundle.SCITTIndexFile, idxBytes(func(y *bundle.SCITTIndex) { y.Statements[scannerIdx].Policy = v2 }), "scitt.registrations", verifier.CodePolicyNotInForce},
		{"policy statement swapped", bundle.SCITTPolicyFile(1), pol0, "scitt.policies", verifier.CodeSCITTPolicy},
		{"log index misstated", bundle.SCITTIndexFile, idxBytes(func(y *bundle.SCITTIndex) { y.Statements[0].LogIndex = 0 }), "", ""},
		{"interval misstated", bundle.SCITTIndexFile, idxBytes(func(y *bundle.SCITTIndex) {
			y.Policies[0].InForce.From = "2001-01-01T00:00:00Z"
		}), "scitt.policies", verifier.CodeSCITTIndex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyZip(t, fetchTrust(t, srv2.URL), replaceFile(t, after, tc.file, tc.data))
			if rep.Verdict != verifier.Broken {
				t.Fatalf("verdict %s", rep.Verdict)
			}
			if tc.check == "" {
				return
			}
			for _, c := range broken(rep) {
				if c.Name == tc.check && c.Code == tc.wantCode {
					return
				}
			}
			t.Fatalf("no broken %s/%s: %+v", tc.check, tc.wantCode, broken(rep))
		})
	}

	// An operator that records the scanner's late statement as passing v2 (which forbids
	// the scanner) is caught when the registration is replayed.
	late := scanner.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3","name":"smuggled"}`), opts)
	entry, _ := receipts.EntryHash(late)
	regs := d2.store.(store.Registrations)
	ctx := context.Background()
	if _, _, err := regs.AddRegistration(ctx, &store.Registration{ID: hexs(entry[:]), Kind: store.KindStatement, Statement: late,
		Issuer: scanner.ISS, Subject: opts.Subject, PolicyID: v2, Received: time.Now()}); err != nil {
		t.Fatal(err)
	}
	idx, cp, rcpt, err := d2.service.Register(ctx, late)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regs.CompleteRegistration(ctx, hexs(entry[:]), idx, cp, rcpt); err != nil {
		t.Fatal(err)
	}
	rep = verifyZip(t, fetchTrust(t, srv2.URL), exportRegistrations(t, srv2.URL, "all"))
	found := false
	for _, c := range broken(rep) {
		found = found || (c.Name == "scitt.registrations" && c.Code == verifier.CodeRegistrationRefused)
	}
	if rep.Verdict != verifier.Broken || !found {
		t.Fatalf("smuggled registration: %s %+v", rep.Verdict, broken(rep))
	}
}
