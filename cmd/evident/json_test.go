package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// TestSubmitCountsDuplicates: evident submit reports what evidentd answered, new records
// apart from records the chain already held at their position. Sending the same ten records
// twice to a real evidentd says 10 new, then 0 new and 10 already logged; a batch that
// overlaps says how many of each.
func TestSubmitCountsDuplicates(t *testing.T) {
	srv := startDaemon(t)
	dir := t.TempDir()
	const ws = "wsp_dup"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	ten, twelve := filepath.Join(dir, "ten.jsonl"), filepath.Join(dir, "twelve.jsonl")
	write(t, ten, bytes.Join(recs[:10], []byte("\n")))
	write(t, twelve, bytes.Join(recs[:12], []byte("\n")))
	for _, tc := range []struct {
		name string
		file string
		text string
		json submitOutput
	}{
		{"first", ten, "10 record(s) accepted into wsp_dup: 10 new, 0 already logged; size 10", submitOutput{Records: 10, New: 10, AlreadyLogged: 0, Size: 10}},
		{"again", ten, "10 record(s) accepted into wsp_dup: 0 new, 10 already logged; size 10", submitOutput{Records: 10, New: 0, AlreadyLogged: 10, Size: 10}},
		{"overlapping", twelve, "12 record(s) accepted into wsp_dup: 2 new, 10 already logged; size 12", submitOutput{Records: 12, New: 2, AlreadyLogged: 10, Size: 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The text form, then the same submission again in JSON (all duplicates by then).
			code, out, errs := cli("submit", "-url", srv.URL, "-chain", ws, "-batch", "4", "-q", tc.file)
			if code != 0 || !strings.HasPrefix(out, tc.text) {
				t.Fatalf("exit %d\n%s\nwant %s\n%s", code, out, tc.text, errs)
			}
			code, out, errs = cli("submit", "--url", srv.URL, "--chain", ws, "-q", "--format", "json", tc.file)
			var got submitOutput
			if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
				t.Fatalf("exit %d (%v)\n%s\n%s", code, err, out, errs)
			}
			if got.Chain != ws || got.Records != tc.json.Records || got.New != 0 || got.AlreadyLogged != tc.json.Records || got.Size != tc.json.Size || !strings.HasPrefix(got.Head, "sha256:") {
				t.Fatalf("JSON %+v after %+v", got, tc.json)
			}
		})
	}
}

// decode runs evident and decodes its standard output as one JSON object.
func decode(t *testing.T, wantCode int, args ...string) map[string]any {
	t.Helper()
	code, out, errs := cli(args...)
	if code != wantCode {
		t.Fatalf("evident %q: exit %d, want %d\n%s\n%s", args, code, wantCode, out, errs)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("evident %q: %v\n%s", args, err, out)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("evident %q: more than one JSON object:\n%s", args, out)
	}
	return m
}

// fields checks members of a decoded JSON object; a want of "*" asks only that the member
// is there and not empty.
func fields(t *testing.T, m map[string]any, want map[string]any) {
	t.Helper()
	for k, w := range want {
		v, ok := m[k]
		switch {
		case !ok:
			t.Errorf("no member %q in %v", k, m)
		case w == "*":
			if v == nil || v == "" || fmt.Sprint(v) == "[]" || fmt.Sprint(v) == "map[]" {
				t.Errorf("member %q is empty in %v", k, m)
			}
		case fmt.Sprint(v) != fmt.Sprint(w):
			t.Errorf("member %q is %v, want %v", k, v, w)
		}
	}
}

// TestJSONOutputs runs every command that reports something with --format json against
// real components (an evidentd on loopback, keys and files it writes) and checks that each
// writes one JSON object with the documented members (docs/cli.md, "JSON output"); and that
// a command that could not run writes nothing on standard output.
func TestJSONOutputs(t *testing.T) {
	srv := startDaemon(t)
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	const ws = "wsp_json"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	write(t, p("records.jsonl"), bytes.Join(b.Records(), []byte("\n")))
	n := len(b.Records())
	auditDump, err := filepath.Abs("../../testvectors/chap-reference/ts/full.audit.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/.well-known/scitt-keys")
	if err != nil {
		t.Fatal(err)
	}
	scittKeys, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	write(t, p("scitt-keys.cbor"), scittKeys)
	ledger, nodes := copLedgerFiles(t, dir)

	steps := []struct {
		name string
		code int
		args []string
		want map[string]any
		then func(t *testing.T, m map[string]any)
	}{
		{name: "version", args: []string{"version"}, want: map[string]any{"program": "evident", "version": "*"}},
		{name: "submit", args: []string{"submit", "--url", srv.URL, "--chain", ws, "-q", p("records.jsonl")},
			want: map[string]any{"chain": ws, "records": n, "new": n, "already_logged": 0, "size": n, "head": "*"}},
		{name: "seal", args: []string{"seal", "--url", srv.URL, "--chain", ws, "-o", p("seal.cose")},
			want: map[string]any{"chain": ws, "seal": 0, "size": n, "closed": false, "root": "*", "head": "*", "sealed_at": "*", "statement_file": p("seal.cose")},
			then: func(t *testing.T, m map[string]any) {
				if _, ok := m["log_index"]; !ok {
					t.Error("no log_index")
				}
			}},
		{name: "export", args: []string{"export", "--url", srv.URL, "--chain", ws, "-o", p("b.zip"), "-q"},
			want: map[string]any{"chain": ws, "file": p("b.zip")},
			then: func(t *testing.T, m map[string]any) {
				st, err := os.Stat(p("b.zip"))
				if err != nil || fmt.Sprint(m["bytes"]) != fmt.Sprint(st.Size()) {
					t.Errorf("bytes %v, file %v %v", m["bytes"], st, err)
				}
			}},
		{name: "trust fetch", args: []string{"trust", "fetch", srv.URL, "-o", p("op.trust.json")},
			want: map[string]any{"url": srv.URL + "/.well-known/evident-trust", "file": p("op.trust.json"), "status": "saved", "origin": "*", "trust_file": "*"},
			then: func(t *testing.T, m map[string]any) {
				if tf, _ := m["trust_file"].(map[string]any); tf["format"] != "evident-trust/v1" || tf["origin"] != m["origin"] {
					t.Errorf("trust_file %v", m["trust_file"])
				}
			}},
		{name: "trust fetch again", args: []string{"trust", "fetch", srv.URL, "-o", p("op.trust.json")}, want: map[string]any{"status": "unchanged"}},
		{name: "verify", args: []string{"verify", "-q", "--trust", p("op.trust.json"), p("b.zip")}, want: map[string]any{"verdict": "verified"}},
		{name: "replay", args: []string{"replay", "-q", "--trust", p("op.trust.json"), p("b.zip")}, want: map[string]any{"format": "evident-replay/v1", "verdict": "verified", "timelines": "*"}},
		{name: "receipt verify transparent", args: []string{"receipt", "verify", "--transparent", p("seal.cose"), "--key", p("scitt-keys.cbor")},
			want: map[string]any{"verdict": "verified", "entry": "*"},
			then: func(t *testing.T, m map[string]any) {
				rs, _ := m["receipts"].([]any)
				if len(rs) != 1 || rs[0].(map[string]any)["verdict"] != "verified" {
					t.Errorf("receipts %v", m["receipts"])
				}
			}},
		{name: "receipt verify entry receipts", args: []string{"receipt", "verify", "--trust", p("op.trust.json"), p("receipt-seq4.json")},
			want: map[string]any{"verdict": "verified"},
			then: func(t *testing.T, m map[string]any) {
				rs, _ := m["entry_receipts"].([]any)
				if len(rs) != 1 {
					t.Fatalf("entry_receipts %v", m["entry_receipts"])
				}
				fields(t, rs[0].(map[string]any), map[string]any{"file": p("receipt-seq4.json"), "verdict": "verified", "chain": ws, "seq": 4, "seal_size": n, "link": "*"})
			}},
		{name: "import", args: []string{"import", "--url", srv.URL, "--chain", "wsp_chapref_full", "-q", auditDump},
			want: map[string]any{"chain": "wsp_chapref_full", "imported": "*", "already_logged": 0, "skipped": 0, "head": "*"},
			then: func(t *testing.T, m map[string]any) {
				if m["new"] != m["imported"] || m["size"] != m["imported"] {
					t.Errorf("new %v, size %v of %v imported", m["new"], m["size"], m["imported"])
				}
			}},
		{name: "import again", args: []string{"import", "--url", srv.URL, "--chain", "wsp_chapref_full", "-q", auditDump},
			want: map[string]any{"imported": 0, "new": 0, "skipped": "*"}},
		{name: "keys generate", args: []string{"keys", "generate", "-o", p("service.key")}, want: map[string]any{"file": p("service.key"), "type": "ed25519", "kid": "*", "kid_b64": "*"}},
		{name: "keys show", args: []string{"keys", "show", p("service.key")}, want: map[string]any{"file": p("service.key"), "type": "*", "kid": "*", "public_key_pem": "*"}},
		{name: "keys thumbprint", args: []string{"keys", "thumbprint", p("service.key")}, want: map[string]any{"file": p("service.key"), "kid": "*"}},
		{name: "keys rotate", args: []string{"keys", "rotate", "--key", p("service.key"), "--type", "p256"},
			want: map[string]any{"key_file": p("service.key"), "retired_kid": "*", "current_kid": "*", "history_file": p("service-history.json")}},
		{name: "keys show history", args: []string{"keys", "show", p("service-history.json")}, want: map[string]any{"file": p("service-history.json"), "format": "*", "keys": "*"}},
		{name: "statement keygen", args: []string{"statement", "keygen", "-o", p("issuer.key")}, want: map[string]any{"file": p("issuer.key"), "type": "ed25519", "kid": "*"}},
		{name: "statement policy", args: []string{"statement", "policy", "--iss", "https://acme.example", "--key", p("issuer.key")},
			then: func(t *testing.T, m map[string]any) {
				if pol, _ := m["policy"].(map[string]any); pol["format"] == nil || m["file"] != nil {
					t.Errorf("policy %v, file %v", m["policy"], m["file"])
				}
			}},
		{name: "statement sign", args: []string{"statement", "sign", "--key", p("issuer.key"), "--iss", "https://acme.example", "--sub", "pkg:x", "--content-type", "text/plain", "-o", p("s.cose"), p("records.jsonl")},
			want: map[string]any{"file": p("s.cose"), "iss": "https://acme.example", "sub": "pkg:x", "content_type": "text/plain", "kid": "*", "bytes": "*"}},
		{name: "cop-ledger verify", args: []string{"cop-ledger", "verify", ledger, "--key", nodes},
			code: exitNotEvaluated, want: map[string]any{"verdict": "not_evaluated", "ledger": ledger, "records": 7, "first_index": 0, "last_index": 6, "signed": 7, "matched": 0, "notes": "*"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.name == "receipt verify entry receipts" {
				resp, err := http.Get(srv.URL + "/v1/chains/" + ws + "/entries/4/entry-receipt")
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("entry receipt: %v %v", resp, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				write(t, p("receipt-seq4.json"), b)
			}
			m := decode(t, s.code, append(s.args, "--format", "json")...)
			fields(t, m, s.want)
			if s.then != nil {
				s.then(t, m)
			}
		})
	}
	// The deprecated --json still writes a line per entry receipt, and says it is deprecated.
	code, out, errs := cli("receipt", "verify", "--trust", p("op.trust.json"), "--json", p("receipt-seq4.json"))
	var line entryReceiptResult
	if err := json.Unmarshal([]byte(out), &line); code != 0 || err != nil || line.Verdict != "verified" || !strings.Contains(errs, "--json is deprecated: use --format json") {
		t.Errorf("--json: exit %d (%v)\n%s\n%s", code, err, out, errs)
	}
	// Could not run: an error on standard error, nothing on standard output.
	for _, args := range [][]string{
		{"seal", "--url", srv.URL, "--chain", "wsp_none"},
		{"keys", "show", p("missing.key")},
		{"export", "--url", srv.URL, "--chain", "wsp_none", "-o", p("none.zip")},
	} {
		code, out, errs := cli(append(args, "--format", "json")...)
		if code != exitFailure || out != "" || errs == "" {
			t.Errorf("evident %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// copLedgerFiles writes a COP Ledger of seven records signed by a node and the node's key
// file, and returns their paths.
func copLedgerFiles(t *testing.T, dir string) (ledger, nodes string) {
	t.Helper()
	recs, err := copscenario.ClaimsTopic("urn:cop:topic:claim-4711", time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	node := cop.Node{ID: "urn:cop:node:beta", KeyID: "urn:cop:key:beta-2026", Signer: key}
	w := cop.NewLedgerWriter(node)
	var buf bytes.Buffer
	for i, r := range recs {
		l, err := w.Append(r, time.Date(2026, 3, 2, 8, 0, i, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(l, '\n'))
	}
	nk, err := cop.MarshalNodeKeys([]cop.NodeKey{{NodeID: node.ID, KeyID: node.KeyID, Public: key.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	ledger, nodes = filepath.Join(dir, "ledger.jsonl"), filepath.Join(dir, "nodes.json")
	write(t, ledger, buf.Bytes())
	write(t, nodes, nk)
	return ledger, nodes
}

// TestMessagesNameTheCommand: an error of evident replay says evident replay, and an export
// into a directory that does not exist says so, exit 3, leaving nothing behind.
func TestMessagesNameTheCommand(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.zip")
	write(t, corrupt, []byte("PK\x03\x04 not really a zip"))
	for _, cmd := range []string{"replay", "verify"} {
		code, out, errs := cli(cmd, corrupt)
		if code != exitFailure || !strings.HasPrefix(errs, "evident "+cmd+": ") || out != "" {
			t.Errorf("evident %s corrupt.zip: exit %d\nstdout %q\nstderr %q", cmd, code, out, errs)
		}
	}

	srv := startDaemon(t)
	mustCLI(t, "submit", "-url", srv.URL, "-chain", "wsp_x", "-q", writeTemp(t, "r.json", []byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{}}`)))
	missing := filepath.Join(dir, "no-such-dir")
	for _, tc := range []struct{ name, out, want string }{
		{"a missing directory", filepath.Join(missing, "x.zip"), fmt.Sprintf("evident export: cannot write %s: the directory %s does not exist\n", filepath.Join(missing, "x.zip"), missing)},
		{"a file as directory", filepath.Join(corrupt, "x.zip"), fmt.Sprintf("evident export: cannot write %s: %s is not a directory\n", filepath.Join(corrupt, "x.zip"), corrupt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli("export", "-url", srv.URL, "-chain", "wsp_x", "-q", "-o", tc.out)
			if code != exitFailure || errs != tc.want || out != "" {
				t.Fatalf("exit %d\nstderr %q\nwant   %q", code, errs, tc.want)
			}
			if strings.Contains(errs, ".evident-export-") {
				t.Errorf("the message names the temporary file: %s", errs)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the missing directory was made: %v", err)
	}
}

// TestDemoNamesWhatRemains: evident demo in a temporary directory names no path under it (it
// is removed when the demo ends) and says so; with --keep DIR every path it prints exists
// afterwards, under DIR.
func TestDemoNamesWhatRemains(t *testing.T) {
	bin := buildTools(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, out, errs := cli("demo", "--evidentd", filepath.Join(bin, "evidentd"))
	if code != exitVerified {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out, tmp) || strings.Contains(errs, tmp) {
		t.Errorf("the output names the temporary directory %s, which is gone:\n%s", tmp, out)
	}
	for _, w := range []string{"Exported the offline bundle: wsp_support_triage.evident.zip\n", "removed now; evident demo --keep DIR keeps them", "VERDICT: VERIFIED"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temporary directory: %v", left)
	}

	keep := filepath.Join(t.TempDir(), "kept")
	code, out, errs = cli("demo", "--keep", keep, "--evidentd", filepath.Join(bin, "evidentd"))
	if code != exitVerified {
		t.Fatalf("demo --keep: exit %d\n%s\n%s", code, out, errs)
	}
	bundle := filepath.Join(keep, "wsp_support_triage.evident.zip")
	for _, w := range []string{"Exported the offline bundle: " + bundle + "\n", "Everything is kept in " + keep, "data in " + filepath.Join(keep, "data")} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, f := range []string{bundle, filepath.Join(keep, "receipt-seq4.json"), filepath.Join(keep, "report.json"), filepath.Join(keep, "evidentd.log")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not kept: %v", err)
		}
	}
}
