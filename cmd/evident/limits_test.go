package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/rawjson"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
)

// nested returns a value nested levels deep, alternating objects and arrays, built in the
// test rather than kept as a file.
func nested(levels int) any {
	var v any = "leaf"
	for i := range levels {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

// bigText is a deterministic string of n bytes, as an agent's draft.
func bigText(n int) string {
	const line = "The carrier confirms the parcel was scanned at the depot at 14:02; the photos show a torn corner.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// auditDump writes a CHAP workspace of n signed calls in the reference Coordinator's form as
// its audit.read dump (JSON Lines of {seq, arrived, envelope, prev_hash}); entry k carries
// payload in its params. It returns the dump's path and the chain head after all n.
func auditDump(t *testing.T, dir, ws string, n, k int, payload any) (string, ledger.Link) {
	t.Helper()
	c := chapscenario.NewCast()
	b := chapscenario.NewBuilder(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	b.Form = chapscenario.Reference
	var lines [][]byte
	add := func(raw []byte, prev ledger.Link) {
		// Written by hand: encoding/json refuses a RawMessage nested past 10,000 levels.
		e := fmt.Appendf(nil, `{"seq":%d,"arrived":%q,"envelope":%s,"prev_hash":%q}`, len(lines), ledger.Timestamp(b.Clock), raw, prev.String())
		lines = append(lines, e)
	}
	for _, p := range []*chapscenario.Participant{c.Coordinator, c.Alice, c.Bob, c.Bot} {
		prev := b.Head()
		if err := b.Join(p, c.Coordinator.URI); err != nil {
			t.Fatal(err)
		}
		recs := b.Records()
		add(recs[len(recs)-1], prev)
	}
	for i := len(lines); i < n; i++ {
		params := map[string]any{"task_id": "tsk_1", "status": "in_progress", "progress": i}
		if i == k {
			params["draft"] = payload
		}
		prev := b.Head()
		raw, err := b.Envelope(c.Bot, c.Coordinator.URI, "task.update", params)
		if err != nil {
			t.Fatal(err)
		}
		add(raw, prev)
	}
	path := filepath.Join(dir, ws+".audit.jsonl")
	if err := os.WriteFile(path, bytes.Join(lines, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Head()
}

// TestImportResumesOnceLimitRaised: a real evidentd with a lowered record limit, over loopback
// HTTP with its log on disk, refuses entry k of an imported chain with a problem detail that
// names the limit, its value, the flag and the environment variable; evident import stops at k
// and says so, and nothing from k on is taken. Restarted on the same data directory with the
// limit raised, the same import resumes at k and the whole chain is taken, its head the one the
// Coordinator computed; its export verifies offline with the verifier's defaults, and with a
// verifier limit below the record the refusal names the flag to raise.
func TestImportResumesOnceLimitRaised(t *testing.T) {
	bin := buildTools(t)
	const n, k = 12, 6
	tests := []struct {
		name          string
		payload       any
		low, raised   []string
		limit, flag   string
		env           string
		value         int64
		verifyTooLow  []string
		verifyHintArg string
	}{
		{"100 levels", nested(100), []string{"--max-depth", "64"}, nil, api.LimitMaxDepth, "--max-depth", "EVIDENT_MAX_DEPTH", 64,
			[]string{"--max-depth", "64"}, "--max-depth 10"},
		{"5,000 levels", nested(5000), []string{"--max-depth", "1000"}, []string{"--max-depth", "6000"}, api.LimitMaxDepth, "--max-depth", "EVIDENT_MAX_DEPTH", 1000,
			[]string{"--max-depth", "1000"}, "--max-depth 50"},
		{"20,000 levels, past encoding/json's 10,000", nested(20000), []string{"--max-depth", "10000"}, nil, api.LimitMaxDepth, "--max-depth", "EVIDENT_MAX_DEPTH", 10000,
			[]string{"--max-depth", "10000"}, "--max-depth 200"},
		{"3 MiB string", bigText(3 << 20), []string{"--max-record-bytes", "1048576"}, nil, api.LimitMaxRecordBytes, "--max-record-bytes", "EVIDENT_MAX_RECORD_BYTES", 1 << 20,
			[]string{"--max-record-bytes", "1048576"}, "--max-record-bytes 31"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			ws := "wsp_limits_" + strconv.Itoa(i)
			dump, head := auditDump(t, dir, ws, n, k, tc.payload)

			d := startEvidentd(t, bin, dir, append([]string{"--data", data, "--seal-every", "0", "--seal-interval", "0"}, tc.low...))
			// The refusal names the limit, its value, the flag and the environment variable.
			lines := bytes.Split(must(os.ReadFile(dump)), []byte("\n"))
			resp, err := http.Post(d.base+"/v1/chains/wsp_probe/entries", "application/json", bytes.NewReader(lines[k]))
			if err != nil {
				t.Fatal(err)
			}
			var p api.Problem
			json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || p.Code != api.CodeRecordTooLarge || p.Limit == nil ||
				*p.Limit != (api.ProblemLimit{Name: tc.limit, Value: tc.value, Flag: tc.flag, Env: tc.env}) ||
				!strings.Contains(p.Detail, tc.flag) || !strings.Contains(p.Detail, tc.env) || !strings.Contains(p.Detail, strconv.FormatInt(tc.value, 10)) {
				t.Fatalf("refusal: %d %+v limit %+v", resp.StatusCode, p, p.Limit)
			}
			c, err := client.New(d.base)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Head(context.Background(), "wsp_probe"); !client.IsCode(err, api.CodeNoSuchChain) {
				t.Fatalf("the refused record changed something: %v", err)
			}

			code, out, errs := cli("import", "-url", d.base, "-chain", ws, "-batch", "3", "-q", dump)
			wantMsg := fmt.Sprintf("seq %d is over evidentd's %s limit of %d: restart evidentd with %s (or %s) raised", k, tc.limit, tc.value, tc.flag, tc.env)
			if code != exitBroken || !strings.Contains(errs, wantMsg) || !strings.Contains(errs, fmt.Sprintf("run again to resume from seq %d", k)) {
				t.Fatalf("import under the lowered limit: exit %d\n%s\n%s", code, out, errs)
			}
			t.Logf("evident import under the lowered limit:\n%s", errs)
			if h, err := c.Head(context.Background(), ws); err != nil || h.Size != k {
				t.Fatalf("after the refusal the chain holds %v entries (%v), want %d", h, err, k)
			}
			d.stop()

			d = startEvidentd(t, bin, dir, append([]string{"--data", data, "--seal-every", "0", "--seal-interval", "0"}, tc.raised...))
			code, out, errs = cli("import", "-url", d.base, "-chain", ws, "-batch", "3", "-q", dump)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("%d entries imported into %s (%d already there): size %d, head %s", n-k, ws, k, n, head)) {
				t.Fatalf("import once raised: exit %d\n%s\n%s", code, out, errs)
			}
			c, _ = client.New(d.base)
			if h, err := c.Head(context.Background(), ws); err != nil || h.Size != n || h.Head != head {
				t.Fatalf("head %+v (%v), want size %d head %s", h, err, n, head)
			}
			// The read API answers the record as it was taken, at any depth.
			resp, err = http.Get(fmt.Sprintf("%s/v1/chains/%s/entries?from=%d&limit=1", d.base, ws, k))
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			entries, _, _ := rawjson.Member(page, "entries")
			got, _ := rawjson.Elements(entries, 0)
			if resp.StatusCode != http.StatusOK || len(got) != 1 || !bytes.Contains(got[0], []byte(`"seq":6`)) ||
				rawjson.Depth(got[0]) < rawjson.Depth(lines[k]) {
				t.Fatalf("GET entries: %s, %d bytes, depth %d", resp.Status, len(page), rawjson.Depth(page))
			}
			if code, _, errs := cli("seal", "-url", d.base, "-chain", ws); code != 0 {
				t.Fatalf("seal: %d %s", code, errs)
			}
			zip := filepath.Join(dir, "b.zip")
			if code, _, errs := cli("export", "-url", d.base, "-chain", ws, "-o", zip); code != 0 {
				t.Fatalf("export: %d %s", code, errs)
			}
			trust := pinTrust(t, d.base)
			if code, out, errs := cli("verify", "-q", "--trust", trust, zip); code != exitVerified {
				t.Fatalf("verify with the defaults: %d\n%s\n%s", code, out, errs)
			}
			if code, out, errs := cli("replay", "-q", "--trust", trust, zip); code != 0 {
				t.Fatalf("replay with the defaults: %d\n%s\n%s", code, out, errs)
			}
			code, out, errs = cli(append([]string{"verify", "-q", "--trust", trust, zip}, tc.verifyTooLow...)...)
			if code != exitBroken || !strings.Contains(out, "verify with "+tc.verifyHintArg) {
				t.Fatalf("verify below the record: %d\n%s\n%s", code, out, errs)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
