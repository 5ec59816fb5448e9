package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/ledger/profile/owp"
	"github.com/evident-log/evident/verifier"
)

// TestOWPProvenanceAcrossEnvelopes: a follow-up envelope names the closed one it continues
// (§3.6.4) by envelope, event and sealed root. Exported together in one bundle
// (/v1/export?chain=a&chain=b), the reference is resolved and verified; exported alone it is
// not evaluated; a reference to an event the prior envelope never held is broken.
func TestOWPProvenanceAcrossEnvelopes(t *testing.T) {
	d, srv := quietDaemon(t, t.TempDir())
	defer func() { srv.Close(); d.Close() }()
	start := time.Date(2026, 5, 7, 3, 14, 0, 0, time.UTC)
	prior := "envelope:wf-coverage-prod:env-0001"
	b1, team, err := owpscenario.CoverageOutreach(prior, start)
	if err != nil {
		t.Fatal(err)
	}
	postJSONL(t, srv.URL+"/v1/chains/"+prior+"/entries?profile=owp/2", bytes.Join(b1.Records(), []byte("\n")))
	waitClosedSealOf(t, srv.URL, prior)
	_, hb := get(t, srv.URL+"/v1/chains/"+prior)
	var head struct{ Root string }
	if err := json.Unmarshal(hb, &head); err != nil || head.Root == "" {
		t.Fatalf("head %s: %v", hb, err)
	}
	lastEvent := "evt:" + prior + ":0014"

	followUp := func(env, event, root string) {
		t.Helper()
		b := owpscenario.NewBuilder(env, start.Add(time.Hour))
		if err := b.Bind(team.RM); err != nil {
			t.Fatal(err)
		}
		prov := map[string]any{"parent_intent": nil, "prior_envelope": prior, "prior_event": event}
		if root != "" {
			prov["prior_root"] = root
		}
		if _, err := b.Event(team.RM, owp.IntentCreated, map[string]any{"intent_id": "int:" + env + ":follow-up",
			"kind": "intent:bank-au:coverage:customer-query/v1", "provenance": prov}); err != nil {
			t.Fatal(err)
		}
		postJSONL(t, srv.URL+"/v1/chains/"+env+"/entries?profile=owp/2", bytes.Join(b.Records(), []byte("\n")))
		postJSONL(t, srv.URL+"/v1/chains/"+env+"/seal", nil)
	}
	good, bad := "envelope:wf-coverage-prod:env-0002", "envelope:wf-coverage-prod:env-0003"
	followUp(good, lastEvent, head.Root)
	followUp(bad, "evt:"+prior+":0099", "")
	wrongRoot := "envelope:wf-coverage-prod:env-0004"
	followUp(wrongRoot, lastEvent, "sha256:"+strings.Repeat("ab", 32))

	export := func(chains ...string) *verifier.Report {
		t.Helper()
		q := url.Values{"chain": chains}
		code, zb := get(t, srv.URL+"/v1/export?"+q.Encode())
		if code != http.StatusOK {
			t.Fatalf("export %v: %d %s", chains, code, zb)
		}
		return verifyProfileZip(t, fetchTrust(t, srv.URL), zb)
	}
	for _, tc := range []struct {
		name    string
		chains  []string
		verdict verifier.Status
		check   string
		status  verifier.Status
		code    verifier.Code
	}{
		{"both envelopes", []string{good, prior}, verifier.Verified, good, verifier.Verified, ""},
		{"follow-up alone", []string{good}, verifier.NotEvaluated, good, verifier.NotEvaluated, verifier.CodeProvenanceAbsent},
		{"missing prior event", []string{prior, bad}, verifier.Broken, bad, verifier.Broken, verifier.CodeProvenanceBroken},
		{"root never sealed", []string{wrongRoot, prior, good}, verifier.Broken, wrongRoot, verifier.Broken, verifier.CodeProvenanceBroken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := export(tc.chains...)
			c := checkOf(rep, "owp.provenance", tc.check)
			if rep.Verdict != tc.verdict || c == nil || c.Status != tc.status || c.Code != tc.code {
				t.Fatalf("verdict %s, owp.provenance %+v\n%s", rep.Verdict, c, profileReportText(rep))
			}
			if len(rep.Chains) != len(tc.chains) {
				t.Fatalf("%d chains in the report, want %d", len(rep.Chains), len(tc.chains))
			}
		})
	}
	if code, b := get(t, srv.URL+"/v1/export?chain="+good+"&chain="+good); code != http.StatusBadRequest {
		t.Fatalf("a chain named twice: %d %s", code, b)
	}
	if code, b := get(t, srv.URL+"/v1/chains/"+prior+"/cop-ledger"); code != http.StatusNotFound || !bytes.Contains(b, []byte(`"not_cop"`)) {
		t.Fatalf("cop-ledger of an OWP envelope: %d %s", code, b)
	}
}
