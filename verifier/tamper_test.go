package verifier_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// tamperOpts is the bundle the tamper suite alters: signed, rotated, sealed three times.
var tamperOpts = testbundle.Options{Entries: 16, SealAt: []int{5, 11, 16}, ReceiptsAtEnd: true, Rotate: true, CheckpointFiles: true}

// mustBreak checks a tampered bundle twice: as altered after export (the manifest's digests
// left as they were: the digest check must catch it) and re-exported with fresh digests (a
// deeper check must catch it). Neither may ever come out verified.
func mustBreak(t *testing.T, orig, tampered *testbundle.Bundle, what string) {
	t.Helper()
	mustBreakIn(t, orig, tampered, what, tampered.StaleReader(t, t.TempDir(), orig.Manifest))
}

// mustBreakZip is mustBreak with the stale bundle as an in-memory zip (for the long byte-flip loops).
func mustBreakZip(t *testing.T, orig, tampered *testbundle.Bundle, what string) {
	t.Helper()
	mustBreakIn(t, orig, tampered, what, tampered.StaleZipReader(t, orig.Manifest))
}

func mustBreakIn(t *testing.T, orig, tampered *testbundle.Bundle, what string, staleReader *bundle.Reader) {
	t.Helper()
	stale := verify(t, staleReader)
	if stale.Verdict != verifier.Broken {
		t.Errorf("%s (stale digests): verdict %s, want broken\n%s", what, stale.Verdict, text(t, stale))
	} else {
		found := false
		for _, c := range checksNamed(stale, "bundle.digest") {
			found = found || c.Status == verifier.Broken
		}
		if !found {
			t.Errorf("%s (stale digests): no broken bundle.digest check\n%s", what, text(t, stale))
		}
	}
	fresh := verify(t, tampered.Reader(t))
	if fresh.Verdict != verifier.Broken {
		t.Errorf("%s (fresh digests): verdict %s, want broken\n%s", what, fresh.Verdict, text(t, fresh))
	}
	for _, c := range checksNamed(fresh, "bundle.digest") {
		if c.Status != verifier.Verified {
			t.Errorf("%s (fresh digests): digest check %s; the deeper checks were meant to catch it", what, c.Status)
		}
	}
	if fresh.ExitCode() != 1 {
		t.Errorf("%s: exit code %d, want 1", what, fresh.ExitCode())
	}
}

// editRecord rewrites the record of line seq through f (the line's prev and link stay).
func editRecord(t *testing.T, b *testbundle.Bundle, seq int, f func(rec map[string]any)) {
	t.Helper()
	lines := b.Lines()
	var line map[string]json.RawMessage
	if err := json.Unmarshal(lines[seq], &line); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(line["record"]))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	f(rec)
	var err error
	if line["record"], err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if lines[seq], err = json.Marshal(line); err != nil {
		t.Fatal(err)
	}
	b.SetLines(lines)
}

func recordOf(t *testing.T, b *testbundle.Bundle, seq int) map[string]any {
	t.Helper()
	var got map[string]any
	editRecord(t, b.Clone(), seq, func(rec map[string]any) { got = rec })
	return got
}

func TestEditMechanismIsNeutral(t *testing.T) {
	// Re-encoding a record (other member order, escaped <&>) keeps its canonical form:
	// the bundle still verifies, so the tampers below fail for what they change.
	orig := testbundle.Build(t, tamperOpts)
	b := orig.Clone()
	for seq := range len(b.Lines()) {
		editRecord(t, b, seq, func(map[string]any) {})
	}
	if bytes.Equal(b.Files[b.EntriesFile()], orig.Files[orig.EntriesFile()]) {
		t.Fatal("re-encoding changed nothing; the test proves nothing")
	}
	if rep := verify(t, b.Reader(t)); rep.Verdict != verifier.Verified {
		t.Fatalf("neutral re-encoding: %s\n%s", rep.Verdict, text(t, rep))
	}
}

func TestTamperRecordFields(t *testing.T) {
	orig := testbundle.Build(t, tamperOpts)
	n := len(orig.Lines())
	otherSig := recordOf(t, orig, 7)["sig"]
	mutations := map[string]func(rec map[string]any){
		"method": func(rec map[string]any) { rec["method"] = "message.retract" },
		"from": func(rec map[string]any) {
			if rec["from"] == "urn:chap:agent:2" {
				rec["from"] = "urn:chap:agent:0"
			} else {
				rec["from"] = "urn:chap:agent:2"
			}
		},
		"ts":        func(rec map[string]any) { rec["ts"] = "2026-01-02T03:04:05.001Z" },
		"id":        func(rec map[string]any) { rec["id"] = "m-forged" },
		"workspace": func(rec map[string]any) { rec["workspace"] = "ws-2" },
		"jsonrpc":   func(rec map[string]any) { rec["jsonrpc"] = "2.1" },
		"params": func(rec map[string]any) {
			p := rec["params"].(map[string]any)
			if _, ok := p["text"]; ok {
				p["text"] = "forged"
			} else {
				p["role"] = "owner"
			}
		},
		"prev_hash": func(rec map[string]any) {
			rec["evidence"] = map[string]any{"prev_hash": ledger.Link{1}.String()}
		},
		"sig-swapped": func(rec map[string]any) { rec["sig"] = otherSig },
		"sig-dropped": func(rec map[string]any) { delete(rec, "sig") },
		"member-added": func(rec map[string]any) {
			rec["note"] = "added after the fact"
		},
	}
	for _, seq := range []int{0, 1, 3, 8, 10, n - 1} {
		for name, f := range mutations {
			if name == "sig-swapped" && seq == 7 {
				continue
			}
			b := orig.Clone()
			editRecord(t, b, seq, f)
			mustBreak(t, orig, b, fmt.Sprintf("seq %d field %s", seq, name))
		}
	}
}

// relink recomputes prev and link of every line from seq on, as a forger would after editing.
func relink(t *testing.T, b *testbundle.Bundle, from int) (head ledger.Link, size int) {
	t.Helper()
	lines := b.Lines()
	var prev ledger.Link
	for i, l := range lines {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatal(err)
		}
		r, err := chap.Parse(line["record"])
		if err != nil {
			t.Fatal(err)
		}
		link := ledger.NextLink(r.Canonical, prev)
		if i >= from {
			pj, _ := json.Marshal(prev)
			lj, _ := json.Marshal(link)
			sj, _ := json.Marshal(i)
			line["prev"], line["link"], line["seq"] = pj, lj, sj
			if lines[i], err = json.Marshal(line); err != nil {
				t.Fatal(err)
			}
		}
		prev = link
	}
	b.SetLines(lines)
	return prev, len(lines)
}

func TestTamperRelinked(t *testing.T) {
	// A forger who edits a record, recomputes every later link and even the manifest's state
	// is still caught: the signature, the seals' roots and the chain's prev_hash naming disagree.
	orig := testbundle.Build(t, tamperOpts)
	for _, seq := range []int{2, 6, 12, 15} {
		for _, field := range []string{"text", "unsigned-text"} {
			b := orig.Clone()
			editRecord(t, b, seq, func(rec map[string]any) {
				p := rec["params"].(map[string]any)
				p["text"] = "forged"
				p["role"] = "forged"
				if field == "unsigned-text" {
					delete(rec, "sig")
				}
			})
			head, _ := relink(t, b, seq)
			mustBreak(t, orig, b, fmt.Sprintf("relinked edit of seq %d (%s)", seq, field))
			b.Manifest.Chains[0].Head = head
			mustBreak(t, orig, b, fmt.Sprintf("relinked edit of seq %d (%s) with manifest state updated", seq, field))
		}
	}
}

func TestTamperDropReorder(t *testing.T) {
	orig := testbundle.Build(t, tamperOpts)
	n := len(orig.Lines())
	for _, seq := range []int{0, 4, 9, n - 1} {
		b := orig.Clone()
		lines := b.Lines()
		b.SetLines(append(lines[:seq:seq], lines[seq+1:]...))
		mustBreak(t, orig, b, fmt.Sprintf("drop seq %d", seq))

		b = orig.Clone()
		b.SetLines(append(b.Lines(), b.Lines()[seq]))
		mustBreak(t, orig, b, fmt.Sprintf("duplicate seq %d at the end", seq))
	}
	for _, seq := range []int{0, 5, n - 2} {
		b := orig.Clone()
		lines := b.Lines()
		lines[seq], lines[seq+1] = lines[seq+1], lines[seq]
		b.SetLines(lines)
		mustBreak(t, orig, b, fmt.Sprintf("swap seq %d and %d", seq, seq+1))

		// Reordered and renumbered/relinked: the records' own prev_hash and the seals object.
		relink(t, b, 0)
		mustBreak(t, orig, b, fmt.Sprintf("swap seq %d and %d, relinked", seq, seq+1))
	}
	// Truncate: the last line, or everything after the first seal.
	b := orig.Clone()
	b.SetLines(b.Lines()[:5])
	mustBreak(t, orig, b, "truncated to 5 entries")
	b = orig.Clone()
	b.SetLines(nil)
	mustBreak(t, orig, b, "empty entries")
}

func TestTamperSwapSignatures(t *testing.T) {
	orig := testbundle.Build(t, tamperOpts)
	for _, pair := range [][2]int{{3, 6}, {4, 7}, {0, 1}, {9, 12}} {
		b := orig.Clone()
		s1, s2 := recordOf(t, b, pair[0])["sig"], recordOf(t, b, pair[1])["sig"]
		editRecord(t, b, pair[0], func(rec map[string]any) { rec["sig"] = s2 })
		editRecord(t, b, pair[1], func(rec map[string]any) { rec["sig"] = s1 })
		mustBreak(t, orig, b, fmt.Sprintf("signatures of %d and %d swapped", pair[0], pair[1]))
		relink(t, b, 0)
		mustBreak(t, orig, b, fmt.Sprintf("signatures of %d and %d swapped, relinked", pair[0], pair[1]))
	}
}

// flipEach alters, one at a time, each stride-th byte of file name in [lo, hi) and checks it breaks.
func flipEach(t *testing.T, orig *testbundle.Bundle, name string, lo, hi int, what string) {
	t.Helper()
	stride := 1
	if raceEnabled || testing.Short() {
		stride = 5
	}
	for i := lo; i < hi; i += stride {
		x := byte(0x01) // low bit at even offsets, high bit at odd ones
		if i%2 == 1 {
			x = 0x80
		}
		b := orig.Clone()
		b.Files[name][i] ^= x
		mustBreakZip(t, orig, b, fmt.Sprintf("%s: byte %d of %s ^ %#x", what, i, name, x))
		if t.Failed() {
			return
		}
	}
}

func TestTamperSealFile(t *testing.T) {
	// A small bundle with one seal: every byte of the transparent seal statement — protected
	// header, payload, signature, receipt, the checkpoint riding in the receipt — is altered in turn.
	// The checkpoint is also a file: a receipt that lost its own checkpoint must not pass by falling back to it.
	orig := testbundle.Build(t, testbundle.Options{Entries: 5, Participants: 2, CheckpointFiles: true})
	name := orig.SealFile(0)
	ts := orig.Files[name]
	stmt, rcpts, err := receipts.SplitTransparent(ts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	rOff := bytes.Index(ts, rcpts[0])
	pOff := bytes.Index(ts, st.Payload)
	if rOff < 0 || pOff < 0 {
		t.Fatal("receipt or payload not found in the seal file")
	}
	t.Logf("seal file: %d bytes, payload at %d (%d bytes), receipt at %d (%d bytes)", len(ts), pOff, len(st.Payload), rOff, len(rcpts[0]))
	flipEach(t, orig, name, 0, len(ts), "seal file")
}

func TestTamperCheckpointFile(t *testing.T) {
	// Receipts without their own checkpoint: the log/checkpoints file is what the receipt's root is checked against.
	orig := testbundle.Build(t, testbundle.Options{Entries: 5, Participants: 2, NoCheckpoint: true, CheckpointFiles: true})
	if rep := verify(t, orig.Reader(t)); rep.Verdict != verifier.Verified {
		t.Fatalf("untampered: %s\n%s", rep.Verdict, text(t, rep))
	}
	for name, data := range orig.Files {
		if !strings.HasPrefix(name, "log/checkpoints/") {
			continue
		}
		sep := bytes.Index(data, []byte("\n\n"))
		t.Run("text", func(t *testing.T) { flipEach(t, orig, name, 0, sep, "checkpoint text") })
		t.Run("signature", func(t *testing.T) { flipEach(t, orig, name, sep+2, len(data)-1, "checkpoint signature") })
		b := orig.Clone()
		delete(b.Files, name)
		rep := verify(t, b.Reader(t))
		if rep.Verdict == verifier.Verified {
			t.Errorf("checkpoint removed: verified")
		}
	}
}

func TestTamperSealResigned(t *testing.T) {
	orig := testbundle.Build(t, testbundle.Options{Entries: 6, Participants: 2})
	st, _, err := receipts.SplitTransparent(orig.Files[orig.SealFile(0)])
	if err != nil {
		t.Fatal(err)
	}
	ps, err := receipts.ParseStatement(st)
	if err != nil {
		t.Fatal(err)
	}
	seal, err := ledger.ParseSeal(ps.Payload)
	if err != nil {
		t.Fatal(err)
	}
	// The service itself signs a seal that disagrees with the chain (wrong root): the receipt
	// no longer fits the statement, and the root is not the recomputed one.
	seal.Root = ledger.RootString([32]byte{7})
	payload, err := seal.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := receipts.SignStatement(orig.Issuer, payload, receipts.StatementOptions{
		Claims: receipts.Claims{Issuer: "https://evident.test", Subject: seal.Chain}, ContentType: ledger.SealContentType})
	if err != nil {
		t.Fatal(err)
	}
	b := orig.Clone()
	_, rc, _ := receipts.SplitTransparent(orig.Files[orig.SealFile(0)])
	if b.Files[b.SealFile(0)], err = receipts.AttachReceipts(stmt, rc...); err != nil {
		t.Fatal(err)
	}
	mustBreak(t, orig, b, "seal re-signed with another root")
	rep := verify(t, b.Reader(t))
	var names []string
	for _, c := range rep.Checks {
		if c.Status == verifier.Broken {
			names = append(names, string(c.Name))
		}
	}
	if !strings.Contains(strings.Join(names, " "), "seal.state") || !strings.Contains(strings.Join(names, " "), "seal.receipt") {
		t.Errorf("broken checks %v, want seal.state and seal.receipt", names)
	}
}

func TestTamperTrust(t *testing.T) {
	orig := testbundle.Build(t, testbundle.Options{Entries: 5, Participants: 2})
	for name, data := range map[string][]byte{
		"trust/issuers.cbor": []byte("garbage"),
		"trust/log.vkey":     []byte("not a key\n"),
	} {
		b := orig.Clone()
		b.Files[name] = data
		mustBreak(t, orig, b, "garbage "+name)
		b = orig.Clone()
		delete(b.Files, name)
		rep := verify(t, b.Reader(t))
		if rep.Verdict != verifier.Broken {
			t.Errorf("%s missing: verdict %s", name, rep.Verdict)
		}
	}
	// Only the unrelated key: the seal's kid matches no issuer key.
	b := orig.Clone()
	keys := orig.Files["trust/issuers.cbor"] // [other issuer, issuer], two keys of one length
	b.Files["trust/issuers.cbor"] = append([]byte{0x81}, keys[1:1+(len(keys)-1)/2]...)
	if rep := verify(t, b.Reader(t)); rep.Verdict != verifier.Broken {
		t.Errorf("issuer key removed: %s\n%s", rep.Verdict, text(t, rep))
	}
}

func TestTamperManifestState(t *testing.T) {
	orig := testbundle.Build(t, tamperOpts)
	b := orig.Clone()
	b.Manifest.Chains[0].Size++
	if rep := verify(t, b.Reader(t)); rep.Verdict != verifier.Broken || checksNamed(rep, "chain.state")[0].Status != verifier.Broken {
		t.Errorf("manifest size off by one: %s", rep.Verdict)
	}
	b = orig.Clone()
	b.Manifest.Log.Origin = "other.test/log"
	if rep := verify(t, b.Reader(t)); rep.Verdict != verifier.Broken {
		t.Errorf("manifest names another log: %s", rep.Verdict)
	}
}
