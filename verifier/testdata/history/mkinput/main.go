// Command mkinput writes the signed CHAP envelopes that generate.sh submits to every
// evidentd of the corpus (../input/). It ran once; the files it wrote are committed and
// are the input of every bundle, old and new. Do not run it again for an existing bundle:
// its output depends on today's packages, and the corpus must keep its recorded bytes.
//
// Chain A (wsp_history_a) is written in two parts, sealed after each: four participants
// join (the Coordinator self-signed as admin, Alice made admin by it, Bob and an agent
// self-signed), a task with non-ASCII text and markup characters, a recorded refusal
// ({outcome, request}), Bob's key rotation (participant.rotate_key) and records signed with
// the new key. Chain B (wsp:history+b) is short and has an id the bundle writes %XX-escaped.
// Every envelope is in the paper's form (routing fields on top, evidence.prev_hash naming
// the predecessor), which every evidentd since the first commit admits. Chain C
// (wsp_history_c) is a Coordinator's audit entries ({seq, arrived, envelope | request and
// outcome, prev_hash}) with the evidence head it reports (c.describe.json), which evidentd
// admits since commit 787ae07.
//
//	go run ./verifier/testdata/history/mkinput verifier/testdata/history/input
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

type participant struct {
	uri, typ, role, kid string
	key                 ed25519.PrivateKey
}

func newParticipant(uri, typ, role, label string) *participant {
	seed := sha256.Sum256([]byte("evident-history-corpus:" + label + ":" + uri))
	return &participant{uri: uri, typ: typ, role: role, kid: fmt.Sprintf("k-%x", seed[:4]), key: ed25519.NewKeyFromSeed(seed[:])}
}

func (p *participant) jwk() map[string]string {
	return chap.JWK(p.kid, p.key.Public().(ed25519.PublicKey))
}

// chain writes one workspace's records, linking each to the previous. With audit set it
// writes them as a CHAP Coordinator's audit entries instead: {seq, arrived, envelope,
// prev_hash} or {seq, arrived, request, outcome, prev_hash}, the Coordinator's own chain
// being the same links.
type chain struct {
	ws    string
	clock time.Time
	head  ledger.Link
	n     int
	out   []string
	audit bool
}

// add appends a record: raw as submitted, hashed the canonical bytes its link hashes.
func (c *chain) add(rec map[string]any, hashed []byte) {
	if c.audit {
		entry := map[string]any{"seq": c.n - 1, "arrived": ledger.Timestamp(c.clock.Add(time.Second)), "prev_hash": c.head.String()}
		if _, ok := rec["outcome"]; ok {
			entry["request"], entry["outcome"] = rec["request"], rec["outcome"]
		} else {
			entry["envelope"] = rec
		}
		rec = entry
	}
	raw, err := json.Marshal(rec)
	check(err)
	c.head = ledger.NextLink(hashed, c.head)
	c.out = append(c.out, string(raw))
}

func (c *chain) envelope(p *participant, to, method string, params map[string]any) map[string]any {
	c.n++
	c.clock = c.clock.Add(7 * time.Second)
	env := map[string]any{
		"jsonrpc": "2.0", "chap": "0.3", "id": fmt.Sprintf("%s-%06d", c.ws, c.n),
		"ts": ledger.Timestamp(c.clock), "workspace": c.ws, "from": p.uri, "to": to,
		"type": "request", "method": method, "params": params,
	}
	if !c.audit { // an audit entry's prev_hash names the predecessor, not the envelope
		env["evidence"] = map[string]any{"prev_hash": c.head.String()}
	}
	raw, err := json.Marshal(env)
	check(err)
	tag, err := chap.Sign(raw, p.kid, p.key)
	check(err)
	env["sig"] = tag
	raw, err = json.Marshal(env)
	check(err)
	canon, err := canonical.Canonicalize(raw, canonical.CHAP)
	check(err)
	c.add(env, canon)
	return env
}

// refusal records a request the Coordinator refused: {outcome, request, prev_hash}.
func (c *chain) refusal(p *participant, method string, params map[string]any, code int, message string) {
	c.n++
	c.clock = c.clock.Add(7 * time.Second)
	params["workspace"], params["from"], params["ts"] = c.ws, p.uri, ledger.Timestamp(c.clock)
	rec := map[string]any{
		"request": map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("%s-%06d", c.ws, c.n), "method": method, "params": params},
		"outcome": map[string]any{"status": "refused", "code": code, "message": message},
	}
	// The link hashes {outcome, request}; prev_hash, submitted beside them, is metadata.
	raw, err := json.Marshal(rec)
	check(err)
	hashed, err := canonical.Canonicalize(raw, canonical.CHAP)
	check(err)
	if !c.audit {
		rec["prev_hash"] = c.head.String()
	}
	c.add(rec, hashed)
}

func (c *chain) write(dir, name string) {
	check(os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(c.out, "\n")+"\n"), 0o644))
	c.out = nil
}

func join(c *chain, by, p *participant, co string) {
	c.envelope(by, co, "participant.join", map[string]any{"uri": p.uri, "type": p.typ, "role": p.role, "jwk": p.jwk()})
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkinput DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	check(os.MkdirAll(dir, 0o755))
	coord := newParticipant("service:coordinator@example.org", "service", chap.RoleAdmin, "v1")
	alice := newParticipant("human:alice@example.org", "human", chap.RoleAdmin, "v1")
	bob := newParticipant("human:bob@example.org", "human", "reviewer", "v1")
	bob2 := newParticipant("human:bob@example.org", "human", "reviewer", "v2")
	bot := newParticipant("agent:triage-bot#v3.2", "agent", "drafter", "v1")
	co := coord.uri
	start := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)

	a := &chain{ws: "wsp_history_a", clock: start}
	join(a, coord, coord, co)
	a.envelope(coord, co, "workspace.create", map[string]any{"workspace_id": a.ws, "profiles": []string{"core/1.0", "review/1.0", "audit-scitt/1.0"}, "mode": "trial"})
	join(a, coord, alice, co)
	join(a, bob, bob, co)
	join(a, bot, bot, co)
	a.envelope(alice, co, "task.create", map[string]any{"task_id": "tsk_ü1", "kind": "draft_customer_response", "assignee": bot.uri,
		"input": map[string]any{"ticket_id": "INC-48910", "customer_message": "Lieferung beschädigt – bitte Rückerstattung. 注文が壊れて届きました 📦 <b>&amp;</b> \"quoted\" \\ tab\t"}})
	a.envelope(bot, co, "task.update", map[string]any{"task_id": "tsk_ü1", "status": "in_progress", "progress": 40})
	a.refusal(bot, "control.pause", map[string]any{"task_id": "tsk_absent", "reason": "hold ⏸"}, -32601, "no such task")
	content := map[string]any{"body": "Es tut uns leid – Ersatz wird heute versandt. 申し訳ありません。", "refund_eur": 100}
	a.envelope(bot, co, "artefact.submit", map[string]any{"task_id": "tsk_ü1", "artefact": map[string]any{
		"id": "art_1", "logical_id": "lgl_reply_48910", "kind": "draft", "content": content}})
	a.write(dir, "a1.jsonl")

	a.envelope(bob, co, "participant.rotate_key", map[string]any{"old_kid": bob.kid, "new_jwk": bob2.jwk()})
	a.envelope(bot, bob2.uri, "review.request", map[string]any{"task_id": "tsk_ü1", "artefact_id": "art_1", "reviewer": bob2.uri})
	a.envelope(bob2, co, "decide.override", map[string]any{"task_id": "tsk_ü1", "logical_id": "lgl_reply_48910", "intent_preserved": true,
		"diff":      []map[string]any{{"op": "remove", "path": "/refund_eur"}},
		"rationale": "Ersatz zuerst (Richtlinie § 4.2); Erstattung auf Wunsch — 返金は希望時のみ."})
	a.envelope(alice, co, "decide.approve", map[string]any{"task_id": "tsk_ü1", "artefact_id": "art_1", "logical_id": "lgl_reply_48910", "note": "approved ✔"})
	a.envelope(bot, co, "task.complete", map[string]any{"task_id": "tsk_ü1", "outcome": "sent"})
	a.write(dir, "a2.jsonl")

	b := &chain{ws: "wsp:history+b", clock: start.Add(time.Hour)}
	join(b, coord, coord, co)
	b.envelope(coord, co, "workspace.create", map[string]any{"workspace_id": b.ws, "profiles": []string{"core/1.0", "audit-scitt/1.0"}, "mode": "trial"})
	join(b, coord, alice, co)
	b.envelope(alice, co, "task.create", map[string]any{"task_id": "tsk_b1", "kind": "note", "assignee": alice.uri, "input": map[string]any{"text": "Schneemann ☃ und Ölfass"}})
	b.envelope(alice, co, "task.complete", map[string]any{"task_id": "tsk_b1", "outcome": "done"})
	b.write(dir, "b.jsonl")

	// Chain C: a Coordinator's audit entries and the evidence head it reports for them.
	c := &chain{ws: "wsp_history_c", clock: start.Add(2 * time.Hour), audit: true}
	join(c, coord, coord, co)
	c.envelope(coord, co, "workspace.create", map[string]any{"workspace_id": c.ws, "profiles": []string{"core/1.0", "audit-scitt/1.0"}, "mode": "trial"})
	join(c, coord, alice, co)
	c.envelope(alice, co, "task.create", map[string]any{"task_id": "tsk_c1", "kind": "note", "assignee": alice.uri, "input": map[string]any{"text": "Prüfbericht № 7 — 監査"}})
	c.refusal(alice, "task.cancel", map[string]any{"task_id": "tsk_absent"}, -32602, "unknown task ✗")
	c.envelope(alice, co, "task.complete", map[string]any{"task_id": "tsk_c1", "outcome": "done"})
	describe, err := json.Marshal(map[string]any{"evidence_head": c.head.String(), "audit_count": c.n})
	check(err)
	c.write(dir, "c.audit.jsonl")
	check(os.WriteFile(filepath.Join(dir, "c.describe.json"), append(describe, '\n'), 0o644))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkinput:", err)
		os.Exit(1)
	}
}
