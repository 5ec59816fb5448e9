package testbundle

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// appendRecords appends the chain's records and writes their entry lines: the
// workspace.create of CreateKid, then Options.Entries envelopes (the joins, the messages, the
// unsigned records and the rotation), sealing the chain at each size of Options.SealAt.
func (bd *builder) appendRecords() {
	bd.tb.Helper()
	if bd.sealAt[0] {
		bd.seal(Base)
	}
	if bd.o.CreateKid != "" {
		bd.appendCreate()
	}
	for i := 0; i < bd.o.Entries; i++ {
		ts := Base.Add(time.Duration(i) * time.Second)
		if slices.Contains(bd.o.TSBack, i) {
			ts = ts.Add(-5 * time.Second)
		}
		env := bd.envelope(i, ts)
		if signer := bd.body(i, env); signer != nil {
			bd.sign(env, signer)
		}
		bd.appendEnvelope(i, ts, env)
		if bd.sealAt[int(bd.chain.Size)] {
			bd.seal(ts.Add(500 * time.Millisecond))
		}
	}
}

// appendCreate appends the reference Coordinator's bootstrap: a workspace.create by
// participant 0, a second before Base, signed with its key under Options.CreateKid.
func (bd *builder) appendCreate() {
	bd.tb.Helper()
	o, p := bd.o, bd.ps[0]
	ts := Base.Add(-time.Second)
	env := map[string]any{"jsonrpc": "2.0", "id": "m-create", "method": "workspace.create", "evidence": map[string]any{"prev_hash": bd.chain.Head.String()},
		"params": map[string]any{"workspace": o.ChainID, "from": p.uri, "ts": ledger.Timestamp(ts), "profiles": []string{"core/1.0", "security-signed/1.0"}}}
	unsigned, err := json.Marshal(env)
	bd.must(err)
	sig, err := chap.Sign(unsigned, o.CreateKid, p.priv)
	bd.must(err)
	env["sig"] = sig
	rec, err := json.Marshal(env)
	bd.must(err)
	a, err := bd.chain.Append(rec, ts)
	bd.must(err)
	bd.must(a.Admission.Verify())
	bd.must(bd.enc.Encode(bundle.EntryLine{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: ledger.Timestamp(ts.Add(time.Millisecond)), Record: a.Admission.Canonical}))
}

// envelope is the frame of record i stamped ts: JSON-RPC, CHAP version, id, workspace, and
// evidence.prev_hash naming Evident's chain head, the Coordinator's own (after an
// UnchainedPrefix) or, in a bare or unchained record, nothing.
func (bd *builder) envelope(i int, ts time.Time) map[string]any {
	env := map[string]any{
		"jsonrpc":   "2.0",
		"chap":      "0.3",
		"id":        fmt.Sprintf("m-%d", i),
		"workspace": bd.o.ChainID,
		"ts":        ledger.Timestamp(ts),
		"evidence":  map[string]any{"prev_hash": bd.chain.Head.String()},
	}
	switch {
	case i < bd.o.UnchainedPrefix || bd.o.Bare:
		delete(env, "evidence")
	case bd.o.UnchainedPrefix > 0:
		env["evidence"] = map[string]any{"prev_hash": bd.own.String()}
	}
	return env
}

// body sets the method, sender and params of record i in env and returns who signs it (nil:
// nobody). The first records are the participants' self-signed joins; then come messages
// between them, the unsigned records of an observer, and participant 1's key rotation, signed
// with the key it retires (the participant signs with the new one from then on).
func (bd *builder) body(i int, env map[string]any) *participant {
	ps := bd.ps
	switch {
	case i < bd.o.Participants:
		p := ps[i]
		role := "agent"
		if i == 0 {
			role = "admin"
		}
		env["method"] = "participant.join"
		env["from"] = p.uri
		env["params"] = map[string]any{"uri": p.uri, "role": role, "jwk": chap.JWK(p.kid, p.priv.Public().(ed25519.PublicKey))}
		return p
	case bd.unsignedAt[i]:
		env["method"] = "message.post"
		env["from"] = "urn:chap:observer:0"
		env["params"] = map[string]any{"text": bd.text, "n": i}
		return nil
	case i == bd.rotateAt:
		p := ps[1]
		nk := key(fmt.Sprintf("p1 rotated %d", i))
		newKid := "k1-2"
		env["method"] = "participant.rotate_key"
		env["from"] = p.uri
		env["params"] = map[string]any{"old_kid": p.kid, "new_jwk": chap.JWK(newKid, nk.Public().(ed25519.PublicKey))}
		signer := &participant{uri: p.uri, kid: p.kid, priv: p.priv}
		p.kid, p.priv = newKid, nk
		return signer
	default:
		p := ps[i%bd.o.Participants]
		env["method"] = "message.post"
		env["from"] = p.uri
		env["params"] = map[string]any{"text": bd.text, "n": i, "to": ps[(i+1)%bd.o.Participants].uri}
		return p
	}
}

// sign adds signer's top-level sig over env.
func (bd *builder) sign(env map[string]any, signer *participant) {
	bd.tb.Helper()
	unsigned, err := json.Marshal(env)
	bd.must(err)
	sig, err := chap.Sign(unsigned, signer.kid, signer.priv)
	bd.must(err)
	env["sig"] = sig
}

// appendEnvelope appends record i (env, or within UnchainedPrefix env wrapped as a Coordinator
// audit entry) arriving at ts, verifies its signature if it has one, advances the
// Coordinator's own chain head and writes its entry line (arrival 1 ms after ts).
func (bd *builder) appendEnvelope(i int, ts time.Time, env map[string]any) {
	bd.tb.Helper()
	var rec []byte
	var err error
	if i < bd.o.UnchainedPrefix {
		rec, err = json.Marshal(map[string]any{"seq": i, "arrived": ledger.Timestamp(ts), "envelope": env})
	} else {
		rec, err = json.Marshal(env)
	}
	bd.must(err)
	a, err := bd.chain.Append(rec, ts)
	bd.must(err)
	if v := a.Admission.Verify; v != nil {
		bd.must(v())
	}
	if i >= bd.o.UnchainedPrefix {
		bd.own = ledger.NextLink(a.Admission.Canonical, bd.own)
	}
	bd.must(bd.enc.Encode(bundle.EntryLine{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: ledger.Timestamp(ts.Add(time.Millisecond)), Record: a.Admission.Canonical, Meta: a.Admission.Meta}))
}
