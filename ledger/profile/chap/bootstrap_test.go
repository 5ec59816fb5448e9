package chap

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/testkeys"
	"github.com/evident-log/evident/ledger"
)

// refSigner is a participant key drawn from testkeys.
func refSigner(uri, kid string) *signer {
	return &signer{uri: uri, kid: kid, priv: testkeys.Ed25519("chap-ref/" + uri + "/" + kid)}
}

// refJWK is a JWK as the reference Coordinator's clients send it (use, alg included).
func (s *signer) refJWK() map[string]string {
	j := JWK(s.kid, s.priv.Public().(ed25519.PublicKey))
	j["use"], j["alg"] = "sig", "EdDSA"
	return j
}

// refEnvelope builds a request in the reference Coordinator's wire form: routing fields in
// params (workspace, from, ts), nothing but jsonrpc, id, method, params (and sig) on top.
func refEnvelope(from, method string, ts time.Time, params map[string]any) map[string]any {
	idSeq++
	p := map[string]any{"workspace": ws, "from": from, "ts": ledger.Timestamp(ts)}
	for k, v := range params {
		p[k] = v
	}
	return map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("ref-%d", idSeq), "method": method, "params": p}
}

func refJoin(s *signer, ts time.Time, role string) map[string]any {
	return refEnvelope(s.uri, "participant.join", ts, map[string]any{"type": "human", "role": role, "display_name": s.uri,
		"scopes": []string{"task.create"}, "jwks": map[string]any{"keys": []any{s.refJWK()}}})
}

func refCreate(from string, ts time.Time) map[string]any {
	return refEnvelope(from, "workspace.create", ts, map[string]any{"profiles": []string{"core/1.0", "review/1.0", "security-signed/1.0"}, "mode": "trial"})
}

var (
	rAlice = refSigner("human:alice", "alice-1")
	rBob   = refSigner("agent:bob", "bob-1")
	rCarol = refSigner("human:carol", "carol-1")
	rZed   = refSigner("human:alice", "alice-other")
)

func pending(c *ledger.Chain) []PendingCreate { return c.State.(*State).Keys.Pending }

func findings(c *ledger.Chain) []ledger.Finding { return c.State.(*State).Findings() }

// TestBootstrap: the create signed with the key the creator's join introduces, in the reference
// wire form, is verified by that join; what cannot be verified is refused or reported.
func TestBootstrap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steps    []step
		pending  int           // pending creates after the steps
		findings []ledger.Code // State.Findings codes after the steps
		detail   string        // a substring of the last refusal's detail, when one is wanted
	}{
		{name: "create signed with the key the following self-signed join introduces", steps: []step{
			{"create (key not yet known)", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(0)), rAlice) }, ""},
			{"join introducing it", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(1), "admin"), rAlice) }, ""},
			{"signed task.create", func(t testing.TB) []byte {
				return signed(t, refEnvelope(rAlice.uri, "task.create", at(2), map[string]any{"kind": "k", "input": map[string]any{}, "assignee": rAlice.uri}), rAlice)
			}, ""},
		}},
		{name: "create whose key arrives in an unsigned join", steps: []step{
			{"create", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(0)), rAlice) }, ""},
			{"unsigned join introducing it", func(t testing.TB) []byte { return raw(t, refJoin(rAlice, at(1), "admin")) }, ""},
		}},
		{name: "tampered pending create refuses the join", steps: []step{
			{"create, body changed after signing", func(t testing.TB) []byte {
				m := refCreate(rAlice.uri, at(0))
				signed(t, m, rAlice)
				m["params"].(map[string]any)["mode"] = "production"
				return raw(t, m)
			}, ""},
			{"join introducing the key", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(1), "admin"), rAlice) }, ledger.CodeBadSignature},
		}, pending: 1, findings: []ledger.Code{CodeBootstrapUnverified}, detail: "workspace.create at seq 0"},
		{name: "create signed by another key under the introduced kid", steps: []step{
			{"create", func(t testing.TB) []byte {
				return signed(t, refCreate(rAlice.uri, at(0)), &signer{uri: rAlice.uri, kid: rAlice.kid, priv: rBob.priv})
			}, ""},
			{"join", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(1), "admin"), rAlice) }, ledger.CodeBadSignature},
		}, pending: 1, findings: []ledger.Code{CodeBootstrapUnverified}, detail: "seq 0"},
		{name: "create signed by a kid the join does not introduce", steps: []step{
			{"create signed with alice-other", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(0)), rZed) }, ""},
			{"join introducing alice-1 only", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(1), "admin"), rAlice) }, ""},
			{"alice's records must now be signed", func(t testing.TB) []byte {
				return raw(t, refEnvelope(rAlice.uri, "task.create", at(2), map[string]any{"kind": "k"}))
			}, ledger.CodeSignatureRequired},
		}, pending: 1, findings: []ledger.Code{CodeBootstrapUnverified}},
		{name: "the create's key offered only by a re-join whose keys are not taken", steps: []step{
			{"create signed alice-1", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(0)), rAlice) }, ""},
			{"alice joins with alice-other", func(t testing.TB) []byte { return signed(t, refJoin(rZed, at(1), "admin"), rZed) }, ""},
			{"alice revokes alice-other", func(t testing.TB) []byte {
				return signed(t, refEnvelope(rAlice.uri, "participant.revoke_key", at(2), map[string]any{"target_uri": rAlice.uri, "kid": rZed.kid}), rZed)
			}, ""},
			{"alice re-joins offering alice-1", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(3), "admin"), rAlice) }, ""},
		}, pending: 1, findings: []ledger.Code{CodeBootstrapUnverified}},
		{name: "create whose sender never joins", steps: []step{
			{"create", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(0)), rAlice) }, ""},
			{"bob joins with his own key", func(t testing.TB) []byte { return signed(t, refJoin(rBob, at(1), "admin"), rBob) }, ""},
		}, pending: 1, findings: []ledger.Code{CodeBootstrapUnverified}},
		{name: "the key arrives for another participant", steps: []step{
			{"create by alice signed bob-1", func(t testing.TB) []byte {
				return signed(t, refCreate(rAlice.uri, at(0)), &signer{uri: rAlice.uri, kid: rBob.kid, priv: rBob.priv})
			}, ""},
			{"bob joins with bob-1", func(t testing.TB) []byte { return signed(t, refJoin(rBob, at(1), "admin"), rBob) }, ""},
		}, pending: 1, findings: []ledger.Code{CodeBootstrapUnverified}},
		{name: "only workspace.create may wait for its key", steps: []step{
			{"task.create signed with an unregistered key", func(t testing.TB) []byte {
				return signed(t, refEnvelope(rAlice.uri, "task.create", at(0), map[string]any{"kind": "k"}), rAlice)
			}, ledger.CodeUnknownKey},
			{"participant.leave signed with an unregistered key", func(t testing.TB) []byte {
				return signed(t, refEnvelope(rAlice.uri, "participant.leave", at(0), nil), rAlice)
			}, ledger.CodeUnknownKey},
		}},
		{name: "a sender with a registered key cannot defer", steps: []step{
			{"alice joins", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(0), "admin"), rAlice) }, ""},
			{"create signed with an unknown kid", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(1)), rZed) }, ledger.CodeUnknownKey},
			{"unsigned create", func(t testing.TB) []byte { return raw(t, refCreate(rAlice.uri, at(1))) }, ledger.CodeSignatureRequired},
			{"create signed with the registered key", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(1)), rAlice) }, ""},
		}},
		{name: "unsigned create (CHAP Core) is not pending", steps: []step{
			{"unsigned create", func(t testing.TB) []byte { return raw(t, refCreate(rAlice.uri, at(0))) }, ""},
			{"join", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(1), "admin"), rAlice) }, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newKeysChain(t)
			var last error
			for _, s := range tc.steps {
				before := c.Head
				err := submit(&c, s.rec(t))
				if got := codeOf(err); got != s.want {
					t.Fatalf("%s: code %q (%v), want %q", s.name, got, err, s.want)
				}
				if err != nil {
					last = err
					if c.Head != before {
						t.Fatalf("%s: a refused record moved the chain", s.name)
					}
				}
			}
			if tc.detail != "" && (last == nil || !strings.Contains(last.Error(), tc.detail)) {
				t.Fatalf("last refusal %v does not name %q", last, tc.detail)
			}
			if got := len(pending(c)); got != tc.pending {
				t.Fatalf("%d pending creates, want %d", got, tc.pending)
			}
			fs := findings(c)
			if len(fs) != len(tc.findings) {
				t.Fatalf("findings %+v, want codes %v", fs, tc.findings)
			}
			for i, f := range fs {
				if f.Code != tc.findings[i] || f.Check != CheckBootstrap || f.Severity != ledger.Critical || f.Seq != 0 {
					t.Fatalf("finding %+v", f)
				}
			}
		})
	}
}

// TestBootstrapOffline: the verifier's replay sees the same thing ingest does — the join's
// Verify fails on a bad pending create, and an unresolved create survives persistence.
func TestBootstrapOffline(t *testing.T) {
	c := newKeysChain(t)
	m := refCreate(rAlice.uri, at(0))
	signed(t, m, rAlice)
	m["params"].(map[string]any)["mode"] = "shadow"
	if err := submit(&c, raw(t, m)); err != nil {
		t.Fatal(err)
	}
	// Offline, the record is appended whatever its signature; Verify is run and reported.
	a, err := c.Append(signed(t, refJoin(rAlice, at(1), "admin"), rAlice), t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Admission.Verify(); codeOf(err) != ledger.CodeBadSignature || !strings.Contains(err.Error(), "seq 0") {
		t.Fatalf("join Verify = %v", err)
	}

	// A pending create persists with the state and is cloned, not shared.
	c = newKeysChain(t)
	if err := submit(&c, signed(t, refCreate(rAlice.uri, at(0)), rAlice)); err != nil {
		t.Fatal(err)
	}
	js, err := c.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	st, err := Adapter{}.NewState(js)
	if err != nil {
		t.Fatal(err)
	}
	if p := st.(*State).Keys.Pending; len(p) != 1 || p[0].Kid != rAlice.kid || p[0].Sender != rAlice.uri || len(p[0].Value) != ed25519.SignatureSize {
		t.Fatalf("restored pending %+v", p)
	}
	again, _ := st.MarshalJSON()
	if string(again) != string(js) {
		t.Fatalf("state JSON not stable:\n%s\n%s", js, again)
	}
	var plain map[string]map[string]json.RawMessage
	if err := json.Unmarshal(js, &plain); err != nil || plain["keys"]["pending"] == nil {
		t.Fatalf("pending not persisted: %s", js)
	}
	restored := &ledger.Chain{ID: c.ID, Profile: c.Profile, Size: c.Size, Head: c.Head, Tree: c.Tree.Clone(), State: st}
	cl := c.Clone()
	join := signed(t, refJoin(rAlice, at(1), "admin"), rAlice)
	if err := submit(&cl, join); err != nil {
		t.Fatal(err)
	}
	if len(pending(cl)) != 0 || len(pending(c)) != 1 {
		t.Fatalf("clone shares pending creates: clone %d, original %d", len(pending(cl)), len(pending(c)))
	}
	if err := submit(&restored, join); err != nil {
		t.Fatalf("restored chain: %v", err)
	}
	if restored.Head != cl.Head || len(findings(restored)) != 0 {
		t.Fatal("restored chain diverged")
	}
}

// TestReferenceKeyLifecycle runs join, rotation and revocation in the reference wire form.
func TestReferenceKeyLifecycle(t *testing.T) {
	alice2 := refSigner(rAlice.uri, "alice-2")
	carol2, carol3 := refSigner(rCarol.uri, "carol-2"), refSigner(rCarol.uri, "carol-3")
	steps := []step{
		{"create", func(t testing.TB) []byte { return signed(t, refCreate(rAlice.uri, at(0)), rAlice) }, ""},
		{"alice joins as admin (jwks)", func(t testing.TB) []byte { return signed(t, refJoin(rAlice, at(1), "admin"), rAlice) }, ""},
		{"bob joins (jwks, no use/alg)", func(t testing.TB) []byte {
			m := refEnvelope(rBob.uri, "participant.join", at(2), map[string]any{"type": "agent", "role": "participant", "jwks": map[string]any{"keys": []any{rBob.jwk()}}})
			return signed(t, m, rBob)
		}, ""},
		{"bob joins again declaring admin", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rBob.uri, "participant.join", at(3), map[string]any{"type": "agent", "role": "admin"}), rBob)
		}, ledger.CodeRoleDenied},
		{"carol's join sent by alice, signed with carol's key", func(t testing.TB) []byte {
			m := refJoin(rCarol, at(3), "participant")
			m["params"].(map[string]any)["from"] = rAlice.uri
			m["params"].(map[string]any)["uri"] = rCarol.uri
			return signed(t, m, rCarol)
		}, ledger.CodeUnknownKey},
		{"carol joins", func(t testing.TB) []byte { return signed(t, refJoin(rCarol, at(4), "participant"), rCarol) }, ""},
		{"carol (not admin) revokes bob's key by target_uri", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rCarol.uri, "participant.revoke_key", at(5), map[string]any{"target_uri": rBob.uri, "kid": rBob.kid, "reason": "compromised"}), rCarol)
		}, ledger.CodeUnauthorized},
		{"rotate signed by the new key", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rAlice.uri, "participant.rotate_key", at(6), map[string]any{"old_kid": rAlice.kid, "new_jwk": alice2.refJWK(), "reason": "scheduled"}), alice2)
		}, ledger.CodeUnauthorized},
		{"rotate alice-1 → alice-2", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rAlice.uri, "participant.rotate_key", at(6), map[string]any{"old_kid": rAlice.kid, "new_jwk": alice2.refJWK(), "reason": "scheduled"}), rAlice)
		}, ""},
		{"alice-1 after the rotation", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rAlice.uri, "task.update", at(7), map[string]any{"task_id": "tsk_1", "state": "in_progress"}), rAlice)
		}, ledger.CodeKeyNotValid},
		{"alice-2 after the rotation", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rAlice.uri, "task.update", at(7), map[string]any{"task_id": "tsk_1", "state": "in_progress"}), alice2)
		}, ""},
		{"admin alice revokes bob's key by target_uri", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rAlice.uri, "participant.revoke_key", at(8), map[string]any{"target_uri": rBob.uri, "kid": rBob.kid, "reason": "compromised"}), alice2)
		}, ""},
		{"bob's key after revocation, backdated", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rBob.uri, "task.update", at(5), map[string]any{"task_id": "tsk_1", "state": "in_progress"}), rBob)
		}, ledger.CodeKeyNotValid},
		{"carol revokes her own key by target_uri", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rCarol.uri, "participant.revoke_key", at(9), map[string]any{"target_uri": rCarol.uri, "kid": rCarol.kid, "reason": "left"}), rCarol)
		}, ""},
		{"carol's revoked key", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rCarol.uri, "task.update", at(10), map[string]any{"task_id": "tsk_1"}), rCarol)
		}, ledger.CodeKeyNotValid},
		{"carol re-joins offering carol-2, signed with it (accepted, key not taken)", func(t testing.TB) []byte {
			return signed(t, refJoin(carol2, at(11), "participant"), carol2)
		}, ""},
		{"carol-2 was not registered", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rCarol.uri, "task.update", at(12), map[string]any{"task_id": "tsk_1"}), carol2)
		}, ledger.CodeUnknownKey},
		{"an unsigned re-join offering carol-2 (accepted, key not taken)", func(t testing.TB) []byte {
			return raw(t, refJoin(carol2, at(12), "participant"))
		}, ""},
		{"carol-2 still not registered", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rCarol.uri, "task.update", at(13), map[string]any{"task_id": "tsk_1"}), carol2)
		}, ledger.CodeUnknownKey},
		{"admin alice re-keys carol with carol-3", func(t testing.TB) []byte {
			m := refJoin(carol3, at(14), "")
			m["params"].(map[string]any)["from"] = rAlice.uri
			m["params"].(map[string]any)["uri"] = rCarol.uri
			delete(m["params"].(map[string]any), "role")
			return signed(t, m, alice2)
		}, ""},
		{"carol-3 signs", func(t testing.TB) []byte {
			return signed(t, refEnvelope(rCarol.uri, "task.update", at(15), map[string]any{"task_id": "tsk_1"}), carol3)
		}, ""},
	}
	c := newKeysChain(t)
	runSteps(t, &c, steps)
	k := c.State.(*State).Keys
	if len(k.Pending) != 0 || len(findings(c)) != 0 {
		t.Fatalf("pending %+v", k.Pending)
	}
	if k.Participants[rAlice.uri].Role != RoleAdmin || k.Participants[rBob.uri].Role != "participant" {
		t.Fatalf("roles %+v %+v", k.Participants[rAlice.uri], k.Participants[rBob.uri])
	}
	if b := k.Participants[rBob.uri].Keys[0]; !b.Revoked || !b.Until.Equal(at(8)) {
		t.Fatalf("bob's key %+v", b)
	}
}

// TestJWKForms: the JWK members a join may carry.
func TestJWKForms(t *testing.T) {
	d := refSigner("human:dora", "d1")
	join := func(jwks any) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			return raw(t, refEnvelope(d.uri, "participant.join", at(0), map[string]any{"type": "human", "jwks": jwks}))
		}
	}
	with := func(k, v string) map[string]any {
		j := map[string]any{}
		for kk, vv := range d.refJWK() {
			j[kk] = vv
		}
		j[k] = v
		return map[string]any{"keys": []any{j}}
	}
	for _, tc := range []struct {
		name string
		jwks any
		want ledger.Code
	}{
		{"use sig, alg EdDSA", with("alg", "EdDSA"), ""},
		{"alg Ed25519", with("alg", "Ed25519"), ""},
		{"no use, no alg", map[string]any{"keys": []any{d.jwk()}}, ""},
		{"use enc", with("use", "enc"), ledger.CodeBadKey},
		{"alg RS256", with("alg", "RS256"), ledger.CodeBadKey},
		{"alg none", with("alg", "none"), ledger.CodeBadKey},
		{"jwks an array", []any{d.jwk()}, ledger.CodeBadKey},
		{"jwks without keys", map[string]any{}, ledger.CodeBadKey},
		{"jwks keys not an array", map[string]any{"keys": d.jwk()}, ledger.CodeBadKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newKeysChain(t)
			runSteps(t, &c, []step{{tc.name, join(tc.jwks), tc.want}})
		})
	}
}

// TestBootstrapUnsignedJoinIsUnsigned: an unsigned join that introduces the key of a pending
// workspace.create verifies the create, but is itself no signed record: its admission says
// Signed false, while its Verify still refuses a bad create signature.
func TestBootstrapUnsignedJoinIsUnsigned(t *testing.T) {
	for _, tamper := range []bool{false, true} {
		t.Run(fmt.Sprintf("tampered=%v", tamper), func(t *testing.T) {
			c := newKeysChain(t)
			m := refCreate(rAlice.uri, at(0))
			rec := signed(t, m, rAlice)
			if tamper {
				m["params"].(map[string]any)["mode"] = "production"
				rec = raw(t, m)
			}
			a, err := c.Append(rec, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Admission.Signed || a.Admission.Verify == nil {
				t.Fatalf("pending create: Signed %v, Verify set %v", a.Admission.Signed, a.Admission.Verify != nil)
			}
			j, err := c.Append(raw(t, refJoin(rAlice, at(1), "admin")), t0)
			if err != nil {
				t.Fatal(err)
			}
			if j.Admission.Signed {
				t.Fatal("an unsigned join is admitted as Signed")
			}
			if j.Admission.Verify == nil {
				t.Fatal("the unsigned join does not verify the pending create")
			}
			err = j.Admission.Verify()
			if got, want := codeOf(err), map[bool]ledger.Code{false: "", true: ledger.CodeBadSignature}[tamper]; got != want {
				t.Fatalf("join Verify = %v, want code %q", err, want)
			}
		})
	}
}
