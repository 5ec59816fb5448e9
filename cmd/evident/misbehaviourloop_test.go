package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/tlogwitness"
)

// TestMisbehaviourLoop closes the loop of a misused log key with the programs a user runs —
// evidentd, evident-witness and evident, over loopback — and nothing else:
//
//  1. evidentd (with its post-quantum key) logs and seals two chains; the operator's trust
//     file, both log keys as served and a bundle are taken;
//  2. someone holding the log's private key shows a witness another tree of the log's size;
//  3. evidentd restarts with that witness and grows: the witness refuses the genuine checkpoint
//     with a proof of misbehaviour, and evidentd keeps the refusal and logs it at ERROR;
//  4. the refusal, the witness's /forks answer and the proof evident verify writes from the
//     witness's served checkpoint are each carried to a fresh directory and checked by
//     `evident misbehaviour check` against the log key as served: proven (exit 1); the same
//     files with one changed byte, or against another log's key, are not (exit 0);
//  5. the post-quantum key as served pins the bundle's ML-DSA-44 signatures; without it they
//     are not evaluated, and another key is broken.
func TestMisbehaviourLoop(t *testing.T) {
	bin := buildTools(t)
	evident := filepath.Join(bin, "evident")
	work := t.TempDir()
	data := filepath.Join(work, "data")

	// 1. A log with history.
	d := startEvidentd(t, bin, work, []string{"--data", data, "--log-mldsa", "--checkpoint-interval", "100ms", "--seal-interval", "0", "--seal-every", "0"})
	size := uint64(0)
	for i := 0; size <= 2 || size&(size-1) == 0; i++ { // a size that is not a power of two, so a fork from it is provable
		if i == 6 {
			t.Fatalf("log size %d after %d chains", size, i)
		}
		ws := fmt.Sprintf("wsp_loop_%d", i)
		for _, args := range [][]string{{"submit", "--url", d.base, "--chain", ws, triageFile(t, work, ws)}, {"seal", "--url", d.base, "--chain", ws}} {
			if code, out, errb := runIn(t, work, evident, args...); code != 0 {
				t.Fatalf("evident %v: exit %d\n%s%s", args, code, out, errb)
			}
		}
		size = servedSize(t, d.base)
	}
	logVKey := filepath.Join(work, "log.vkey")
	pqVKey := filepath.Join(work, "log-mldsa.vkey")
	write(t, logVKey, httpGet(t, d.base+"/log/vkey"))
	write(t, pqVKey, httpGet(t, d.base+"/log/mldsa.vkey"))
	trust := filepath.Join(work, "operator.trust.json")
	bundle := filepath.Join(work, "case.zip")
	for _, args := range [][]string{{"trust", "fetch", "-o", trust, d.base}, {"export", "--url", d.base, "--chain", "wsp_loop_0", "-o", bundle}} {
		if code, out, errb := runIn(t, work, evident, args...); code != 0 {
			t.Fatalf("evident %v: exit %d\n%s%s", args, code, out, errb)
		}
	}
	d.stop()
	origin, _, _ := strings.Cut(strings.TrimSpace(string(mustRead(t, logVKey))), "+")

	// 2. A witness of the log, shown a forged tree of the log's size.
	w := testinfra.StartWitness(t, filepath.Join(bin, "evident-witness"), "witness.test/w1", origin, strings.TrimSpace(string(mustRead(t, logVKey))))
	signer, _, err := log.LoadOrCreateKey(filepath.Join(data, "keys"), origin)
	if err != nil {
		t.Fatal(err)
	}
	forgedRoot := sha256.Sum256([]byte("a history the log never had"))
	forged, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: origin, Size: size, Hash: forgedRoot[:]}.Marshal())}, signer)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(w.URL+"/add-checkpoint", "text/plain", bytes.NewReader((&tlogwitness.Request{Checkpoint: forged}).Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the witness did not cosign the first checkpoint it saw: HTTP %d", resp.StatusCode)
	}

	// 3. evidentd, restarted with that witness, grows, is refused and keeps the refusal.
	policy := filepath.Join(work, "witness.policy")
	write(t, policy, []byte(fmt.Sprintf("witness w1 %s %s\nquorum w1\n", w.VKeys[0], w.URL)))
	d = startEvidentd(t, bin, work, []string{"--data", data, "--log-mldsa", "--checkpoint-interval", "100ms", "--seal-interval", "0", "--seal-every", "0", "--witness-policy", policy, "--witness-fail-open"})
	// The log grows (fail-open, so the seal is answered although the witness refuses).
	for _, args := range [][]string{{"submit", "--url", d.base, "--chain", "wsp_loop_after", triageFile(t, work, "wsp_loop_after")}, {"seal", "--url", d.base, "--chain", "wsp_loop_after"}} {
		if code, out, errb := runIn(t, work, evident, args...); code != 0 {
			t.Fatalf("evident %v: exit %d\n%s%s", args, code, out, errb)
		}
	}
	refusal := waitForFile(t, filepath.Join(data, "misbehaviour"), 60*time.Second, d)
	if !d.logged("level=ERROR msg=\"a witness refused the log's checkpoint") {
		t.Errorf("evidentd kept %s but logged no ERROR about it", refusal)
	}
	d.stop()

	// 4. Each record, carried to a fresh directory, checked offline against the served key.
	id := sha256.Sum256([]byte(origin))
	forks := httpGet(t, w.URL+"/"+hex.EncodeToString(id[:])+"/forks")
	held := httpGet(t, w.URL+"/"+hex.EncodeToString(id[:])+"/checkpoint")
	written := t.TempDir()
	if code, out, errb := runIn(t, work, evident, "verify", "-q", "--trust", trust, "--checkpoint", writeTo(t, work, "witness-checkpoint", held), "--misbehaviour-dir", written, bundle); code != exitBroken {
		t.Fatalf("verify --checkpoint <the witness's checkpoint>: exit %d, want %d\n%s%s", code, exitBroken, out, errb)
	}
	fromVerify, _ := filepath.Glob(filepath.Join(written, "misbehaviour-*.json"))
	if len(fromVerify) != 1 {
		t.Fatalf("evident verify wrote %d proofs, want 1", len(fromVerify))
	}
	records := map[string][]byte{"refusal.json": mustRead(t, refusal), "forks.json": forks, "verify.json": mustRead(t, fromVerify[0])}
	fresh := t.TempDir()
	write(t, filepath.Join(fresh, "log.vkey"), mustRead(t, logVKey))
	_, otherVKey, err := note.GenerateKey(nil, origin)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(fresh, "other.vkey"), []byte(otherVKey+"\n"))
	for name, b := range records {
		write(t, filepath.Join(fresh, name), b)
		code, out, errb := runIn(t, fresh, evident, "misbehaviour", "check", name, "--log-key", "log.vkey")
		if code != exitBroken || !strings.HasPrefix(out, "PROVEN: the log signed two histories\n") {
			t.Errorf("%s: exit %d, want %d and PROVEN first\n%s%s", name, code, exitBroken, out, errb)
		}
		if code, out, _ := runIn(t, fresh, evident, "misbehaviour", "check", name, "--log-key", "other.vkey"); code != 0 || !strings.HasPrefix(out, "NOT PROVEN: ") {
			t.Errorf("%s against another key: exit %d, want 0 and NOT PROVEN\n%s", name, code, out)
		}
		changed := changeForgedRoot(t, b, forgedRoot[:])
		write(t, filepath.Join(fresh, "changed-"+name), changed)
		if code, out, _ := runIn(t, fresh, evident, "misbehaviour", "check", "changed-"+name, "--log-key", "log.vkey"); code != 0 || !strings.HasPrefix(out, "NOT PROVEN: ") {
			t.Errorf("%s with the forged root changed: exit %d, want 0 and NOT PROVEN\n%s", name, code, out)
		}
	}
	// The witness's forks answer as --checkpoint is a fork too.
	if code, out, errb := runIn(t, work, evident, "verify", "-q", "--trust", trust, "--checkpoint", writeTo(t, work, "forks.json", forks), "--misbehaviour-dir", "", bundle); code != exitBroken {
		t.Errorf("verify --checkpoint <the witness's forks>: exit %d, want %d\n%s%s", code, exitBroken, out, errb)
	}

	// 5. The post-quantum key as served pins the bundle's ML-DSA-44 signatures.
	_, otherPQ, err := log.GenerateMLDSAKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		pins   []string
		status string
		code   string
	}{
		{"pinned as served", []string{logVKey, pqVKey}, "verified", ""},
		{"pinned by the trust file", []string{trust}, "verified", ""},
		{"not pinned", []string{logVKey}, "not_evaluated", "trust_not_pinned"},
		{"another key pinned", []string{logVKey, writeTo(t, work, "other-mldsa.vkey", []byte(otherPQ))}, "not_evaluated", "trust_mismatch"},
	} {
		args := []string{"verify", "-q", "--format", "json", "--misbehaviour-dir", ""}
		for _, p := range c.pins {
			args = append(args, "--log-key", p)
		}
		_, out, errb := runIn(t, work, evident, append(args, bundle)...)
		var rep struct {
			Checks []struct{ Name, Status, Code string }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, errb)
		}
		found := false
		for _, ch := range rep.Checks {
			if ch.Name == "log.pq_signature" {
				found = true
				if ch.Status != c.status || ch.Code != c.code {
					t.Errorf("%s: log.pq_signature %s/%s, want %s/%s", c.name, ch.Status, ch.Code, c.status, c.code)
				}
			}
		}
		if !found {
			t.Errorf("%s: no log.pq_signature check", c.name)
		}
	}
}

// triageFile writes the CHAP support triage of workspace ws as JSON Lines in dir.
func triageFile(t *testing.T, dir, ws string) string {
	t.Helper()
	b, _, err := chapscenario.SupportTriageReference(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return writeTo(t, dir, ws+".jsonl", bytes.Join(b.Records(), []byte("\n")))
}

// servedSize is the tree size of the checkpoint evidentd serves.
func servedSize(t *testing.T, base string) uint64 {
	t.Helper()
	var cp tlog.Checkpoint
	text, _, _ := bytes.Cut(httpGet(t, base+"/log/checkpoint"), []byte("\n\n"))
	if _, err := cp.Unmarshal(append(text, '\n')); err != nil {
		t.Fatal(err)
	}
	return cp.Size
}

// waitForFile waits for the first file in dir, which d makes.
func waitForFile(t *testing.T, dir string, limit time.Duration, d *evidentdProc) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(m) > 0 {
			return m[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t.Fatalf("nothing appeared in %s within %v; evidentd logged:\n%s", dir, limit, strings.Join(d.log, "\n"))
	return ""
}

// writeTo writes b to dir/name and returns the path.
func writeTo(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	write(t, p, b)
	return p
}

// changeForgedRoot changes one byte of the forged root wherever a record carries it (its
// base64 in the checkpoint notes, which the JSON holds as strings).
func changeForgedRoot(t *testing.T, b, root []byte) []byte {
	t.Helper()
	enc := base64.StdEncoding.EncodeToString(root)
	if !bytes.Contains(b, []byte(enc)) {
		t.Fatalf("the record does not carry the forged root %s:\n%s", enc, b)
	}
	changed := []byte(enc)
	changed[0] ^= 'A' ^ 'B'
	if changed[0] == '+' || changed[0] == '/' {
		changed[0] = 'C'
	}
	return bytes.ReplaceAll(b, []byte(enc), changed)
}
