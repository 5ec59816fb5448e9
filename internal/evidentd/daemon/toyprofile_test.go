package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/chaptest"
	"github.com/evident-log/evident/internal/profiledocs"
	"github.com/evident-log/evident/internal/toyprofile"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// TestToyProfileThroughTheSeam: a profile declared in one package (internal/toyprofile) and
// added to the registry is served by evidentd (its records admitted and refused with its
// code, its route answered, its setting and key file used), exported (its file in the
// bundle), verified (its check in the report, verified, and broken on a wrong file) and
// documented (its codes and check in the docs' tables), with nothing else naming it.
func TestToyProfileThroughTheSeam(t *testing.T) {
	reg, err := profile.New(append(profile.Default().All(), toyprofile.Adapter{})...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, Profiles: reg,
		ProfileSettings: map[string]string{toyprofile.GreetingSetting: "hej"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveUntilCleanup(t, d).URL
	const chain = "toy-chain"

	// Served: records admitted under the toy profile, and refused with its code and the
	// status it declares.
	postJSONL(t, srv+"/v1/chains/"+chain+"/entries?profile="+toyprofile.Profile, []byte(`{"id":"a","n":1}`+"\n"+`{"id":"b","n":2}`+"\n"+`{"id":"c","n":3}`))
	status, b := post(t, srv+"/v1/chains/"+chain+"/entries", "application/jsonl", []byte(`{"id":"d","n":5}`))
	var p api.Problem
	if err := json.Unmarshal(b, &p); err != nil || status != http.StatusConflict || p.Code != api.ProblemCode(toyprofile.CodeGap) {
		t.Fatalf("a gap: %d %s", status, b)
	}
	postJSONL(t, srv+"/v1/chains/"+chain+"/entries", []byte(`{"id":"d","n":4}`))
	postJSONL(t, srv+"/v1/chains/"+chain+"/seal", nil)
	if code, b := get(t, srv+"/v1/chains/"+chain+"/"+toyprofile.Route); code != http.StatusOK || string(b) != "hej 4\n" {
		t.Fatalf("toy tally: %d %q", code, b)
	}
	postJSONL(t, srv+"/v1/chains/other/entries?profile=toy/1", []byte(`{"id":"x","n":1}`))
	if code, b := get(t, srv+"/v1/chains/nope/"+toyprofile.Route); code != http.StatusNotFound || !bytes.Contains(b, []byte(`"no_such_chain"`)) {
		t.Fatalf("tally of no chain: %d %s", code, b)
	}
	// A chain of another profile: the route's own problem.
	const chap = "wsp_toy_neighbour"
	postJSONL(t, srv+"/v1/chains/"+chap+"/entries", bytes.Join(chaptest.TaskChain(t, chap, 1, chaptest.TaskOptions{}), []byte("\n")))
	if code, b := get(t, srv+"/v1/chains/"+chap+"/"+toyprofile.Route); code != http.StatusNotFound || !bytes.Contains(b, []byte(`"not_toy"`)) {
		t.Fatalf("tally of a CHAP chain: %d %s", code, b)
	}
	if code, b := get(t, srv+"/v1/openapi.json"); code != http.StatusOK || !bytes.Contains(b, []byte(`"/v1/chains/{chain}/toy-tally"`)) || !bytes.Contains(b, []byte(`"getToyTally"`)) {
		t.Fatalf("the description lacks the toy route: %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", toyprofile.KeyFile)); err != nil {
		t.Fatalf("the toy key file: %v", err)
	}
	if !slices.ContainsFunc(d.KeyFiles(), func(k KeyFile) bool { return filepath.Base(k.Path) == toyprofile.KeyFile && k.Secret }) {
		t.Fatalf("the key inventory lacks the toy key: %+v", d.KeyFiles())
	}

	// Exported: the toy files beside the chain.
	code, zb := get(t, srv+"/v1/export?chain="+chain)
	if code != http.StatusOK {
		t.Fatalf("export: %d", code)
	}
	files := zipFiles(t, zb)
	if got := string(files[toyprofile.TallyFile(bundle.ChainDir(chain))]); got != "hej 4\n" {
		t.Fatalf("bundle tally %q", got)
	}
	if len(files[toyprofile.PublicKeyFile]) != 65 {
		t.Fatalf("bundle toy key %q", files[toyprofile.PublicKeyFile])
	}

	// Verified: with the registry, the toy check runs and holds; without it, the chain's
	// profile is unknown; a tally that lies is broken.
	trust := fetchTrust(t, srv)
	rep := verifyWith(t, reg, trust, zb)
	// (Toy records carry no signature, so the verdict is at best not_evaluated.)
	if c := checkOf(rep, toyprofile.CheckTally, chain); c == nil || c.Status != verifier.Verified || rep.Verdict != verifier.NotEvaluated {
		t.Fatalf("verdict %s, toy.tally %+v\n%s", rep.Verdict, c, profileReportText(rep))
	}
	if c := checkOf(verifyWith(t, nil, trust, zb), verifier.CheckChainProfile, chain); c == nil || c.Code != verifier.CodeUnknownProfile {
		t.Fatalf("the default verifier knew the toy profile: %+v", c)
	}
	f := map[string][]byte{}
	for k, v := range files {
		f[k] = v
	}
	f[toyprofile.TallyFile(bundle.ChainDir(chain))] = []byte("hej 5\n")
	expectProfileBroken(t, "a wrong tally", verifyWith(t, reg, trust, rezip(t, f)), toyprofile.CheckTally, verifier.Code(toyprofile.CodeTallyWrong))

	// Documented: the docs' tables, made from the registry, hold the toy rows.
	for _, want := range []string{"| `toy_gap` | refusal | 409 | `toy/1` |", "| `not_toy` | problem | 404 | `toy/1` |", "| `toy_tally_wrong` | verification | — | `toy/1` |"} {
		if !strings.Contains(profiledocs.Codes(reg), want) {
			t.Errorf("codes table lacks %q", want)
		}
	}
	if !strings.Contains(profiledocs.Checks(reg), "| `toy.tally` |") {
		t.Error("checks table lacks toy.tally")
	}
}

// verifyWith verifies a bundle with the profiles of reg (nil: the default registry).
func verifyWith(t *testing.T, reg *profile.Registry, trust *trustfile.File, b []byte) *verifier.Report {
	t.Helper()
	r, err := bundle.OpenZipBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Trust: trust, Profiles: reg})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
