package verifier_test

import (
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/cheq"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/owp"
	"github.com/evident-log/evident/verifier"
)

// TestProfileCapabilities pins which ledger capabilities the built-in profiles offer the
// verifier, and that every check they run is one CheckNames lists (and so docs/report.md). A
// profile added later needs no row here: the registry's tests hold every profile's checks to
// its documented ones (ledger/profile).
func TestProfileCapabilities(t *testing.T) {
	type caps struct{ keyHolder, linked, sliceable, referrer, crossChain, bundleChecker, auditor, attested bool }
	tests := []struct {
		profile string
		want    caps
		checks  []ledger.CheckName // checks the profile runs
	}{
		{chap.Profile, caps{keyHolder: true, linked: true, sliceable: true, auditor: true}, []ledger.CheckName{chap.CheckBootstrap}},
		{owp.Profile, caps{referrer: true, crossChain: true}, []ledger.CheckName{owp.CheckProvenance}},
		{cop.Profile, caps{bundleChecker: true, auditor: true}, []ledger.CheckName{cop.CheckParents, cop.CheckLedger}},
		{cheq.Profile, caps{}, nil},
		{chieflab.Profile, caps{auditor: true, attested: true},
			[]ledger.CheckName{chieflab.CheckApproval, chieflab.CheckIdempotency, chieflab.CheckWorkspace, chieflab.CheckOperator}},
	}
	names := verifier.CheckNames()
	for _, tc := range tests {
		t.Run(tc.profile, func(t *testing.T) {
			prof, ok := profile.Lookup(tc.profile)
			if !ok {
				t.Fatalf("profile %s not served", tc.profile)
			}
			st, err := prof.NewState(nil)
			if err != nil {
				t.Fatal(err)
			}
			var got caps
			_, got.keyHolder = st.(ledger.KeyHolder)
			_, got.linked = prof.(ledger.Linked)
			_, got.sliceable = prof.(ledger.Sliceable)
			_, got.referrer = st.(ledger.Referrer)
			cc, isCC := prof.(ledger.CrossChain)
			got.crossChain = isCC
			_, got.bundleChecker = prof.(ledger.BundleChecker)
			au, isAu := st.(ledger.Auditor)
			got.auditor = isAu
			_, got.attested = st.(ledger.ServiceAttested)
			if got != tc.want {
				t.Errorf("capabilities %+v, want %+v", got, tc.want)
			}
			var runs []ledger.CheckName
			if isAu {
				runs = append(runs, au.Checks()...)
			}
			if isCC {
				runs = append(runs, cc.ReferenceCheck())
			}
			for _, c := range tc.checks {
				if !slices.Contains(names, c) {
					t.Errorf("check %q of %s is not in verifier.CheckNames", c, tc.profile)
				}
			}
			for _, c := range runs {
				if !slices.Contains(tc.checks, c) {
					t.Errorf("%s runs check %q this table does not list", tc.profile, c)
				}
			}
		})
	}
}

// TestSharedCodes keeps the codes the verifier exports for checks a profile runs, and the
// ones a profile's bundle check shares with the verifier, equal to their source.
func TestSharedCodes(t *testing.T) {
	for _, tc := range []struct {
		verifier verifier.Code
		source   ledger.Code
	}{
		{verifier.CodeMissing, ledger.CodeFileMissing},
		{verifier.CodeTrust, ledger.CodeTrustInvalid},
		{verifier.CodeNotReplayed, ledger.CodeNotReplayed},
	} {
		if tc.verifier != tc.source {
			t.Errorf("verifier code %q, source %q", tc.verifier, tc.source)
		}
		if !slices.Contains(verifier.Codes(), tc.verifier) {
			t.Errorf("%q is not in verifier.Codes", tc.verifier)
		}
	}
}
