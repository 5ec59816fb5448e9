package chap

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

const ws = "wsp_keys"

var t0 = time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// signer is a participant key with a deterministic Ed25519 private key.
type signer struct {
	uri, kid string
	priv     ed25519.PrivateKey
}

func newSigner(uri, kid string) *signer {
	seed := sha256.Sum256([]byte(uri + "/" + kid))
	return &signer{uri: uri, kid: kid, priv: ed25519.NewKeyFromSeed(seed[:])}
}

func (s *signer) jwk() map[string]string { return JWK(s.kid, s.priv.Public().(ed25519.PublicKey)) }

var idSeq int

// envelope builds a CHAP request from `from` at ts; mods may change it before signing.
func envelope(from, method string, ts time.Time, params map[string]any) map[string]any {
	idSeq++
	if params == nil {
		params = map[string]any{}
	}
	return map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("r-%d", idSeq), "method": method, "from": from,
		"ts": ledger.Timestamp(ts), "workspace": ws, "to": "service:coordinator", "params": params}
}

func raw(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signed signs m with key (kid of key, whatever the envelope's from says).
func signed(t testing.TB, m map[string]any, key *signer) []byte {
	t.Helper()
	tag, err := Sign(raw(t, m), key.kid, key.priv)
	if err != nil {
		t.Fatal(err)
	}
	m["sig"] = tag
	return raw(t, m)
}

func codeOf(err error) ledger.Code {
	if err == nil {
		return ""
	}
	var re *ledger.RecordError
	if errors.As(err, &re) {
		return re.Code
	}
	return ledger.Code("untyped: " + err.Error())
}

// submit admits rec into *c the way ingest does: admission on a clone, then the signature,
// and the clone replaces *c only when both pass.
func submit(c **ledger.Chain, rec []byte) error {
	next := (*c).Clone()
	a, err := next.Append(rec, t0)
	if err != nil {
		return err
	}
	// A signed record has a Verify; an unsigned one has one only when it resolves a pending
	// workspace.create (an unsigned join introducing the create's key).
	if a.Admission.Signed != (a.Admission.Verify != nil) && (a.Admission.Signed || a.Admission.Method != "participant.join") {
		return fmt.Errorf("Signed %v but Verify set %v", a.Admission.Signed, a.Admission.Verify != nil)
	}
	if a.Admission.Verify != nil {
		if err := a.Admission.Verify(); err != nil {
			return err
		}
	}
	*c = next
	return nil
}

type step struct {
	name string
	rec  func(t testing.TB) []byte
	want ledger.Code // "" = accepted
}

func runSteps(t *testing.T, c **ledger.Chain, steps []step) {
	t.Helper()
	for _, s := range steps {
		before := (*c).Head
		err := submit(c, s.rec(t))
		if got := codeOf(err); got != s.want {
			t.Fatalf("%s: code %q (%v), want %q", s.name, got, err, s.want)
		}
		if s.want != "" {
			var re *ledger.RecordError
			if !errors.As(err, &re) || !errors.Is(err, ledger.ErrRefused) {
				t.Fatalf("%s: %T is not a *ledger.RecordError", s.name, err)
			}
			if (*c).Head != before {
				t.Fatalf("%s: a refused record moved the chain", s.name)
			}
		}
	}
}

var (
	alice1 = newSigner("human:alice", "a1")
	alice2 = newSigner("human:alice", "a2")
	alice3 = newSigner("human:alice", "a3")
	bob1   = newSigner("agent:bob", "b1")
	carol1 = newSigner("human:carol", "c1")
	admin1 = newSigner("human:root", "r1")
	stray  = newSigner("human:alice", "zz")
)

func msg(from string, sec int) map[string]any {
	return envelope(from, "task.update", at(sec), map[string]any{"status": "ok", "n": sec})
}

// lifecycle is one chain through join, rotation and revocation, each step checked in turn.
func lifecycle() []step {
	return []step{
		{"alice joins with a JWK (unsigned, no key yet)", func(t testing.TB) []byte {
			return raw(t, envelope(alice1.uri, "participant.join", at(0), map[string]any{"jwk": alice1.jwk(), "type": "human", "role": "admin"}))
		}, ""},
		{"alice signed envelope", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 1), alice1) }, ""},
		{"bad signature (body changed after signing)", func(t testing.TB) []byte {
			m := msg(alice1.uri, 2)
			signed(t, m, alice1)
			m["params"] = map[string]any{"status": "tampered"}
			return raw(t, m)
		}, ledger.CodeBadSignature},
		{"signature by another key under alice's kid", func(t testing.TB) []byte {
			m := msg(alice1.uri, 2)
			return signed(t, m, &signer{uri: alice1.uri, kid: "a1", priv: bob1.priv})
		}, ledger.CodeBadSignature},
		{"unknown kid", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 2), stray) }, ledger.CodeUnknownKey},
		{"signed by a sender without keys", func(t testing.TB) []byte { return signed(t, msg("human:nobody", 2), stray) }, ledger.CodeUnknownKey},
		{"unsigned from a sender with a key", func(t testing.TB) []byte { return raw(t, msg(alice1.uri, 2)) }, ledger.CodeSignatureRequired},
		{"unsigned, no ts, from a sender with a key", func(t testing.TB) []byte {
			m := msg(alice1.uri, 2)
			delete(m, "ts")
			return raw(t, m)
		}, ledger.CodeSignatureRequired},
		{"unsigned from a sender without a key", func(t testing.TB) []byte { return raw(t, msg("human:guest", 2)) }, ""},
		{"malformed sig", func(t testing.TB) []byte {
			m := msg(alice1.uri, 2)
			m["sig"] = "ed25519:a1:not-base64"
			return raw(t, m)
		}, ledger.CodeSignatureFormat},
		{"self-signed join of bob", func(t testing.TB) []byte {
			return signed(t, envelope(bob1.uri, "participant.join", at(3), map[string]any{"jwk": bob1.jwk()}), bob1)
		}, ""},
		{"bob signed envelope", func(t testing.TB) []byte { return signed(t, msg(bob1.uri, 4), bob1) }, ""},
		{"join of carol signed by carol's key but sent as alice", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.join", at(4), map[string]any{"uri": carol1.uri, "jwk": carol1.jwk()}), carol1)
		}, ledger.CodeUnknownKey},
		{"bob joins again with a new key, unsigned", func(t testing.TB) []byte {
			return raw(t, envelope("human:guest", "participant.join", at(4), map[string]any{"uri": bob1.uri, "jwk": newSigner(bob1.uri, "b2").jwk()}))
		}, ledger.CodeUnauthorized},
		{"alice adds a3 by a join signed with a1", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.join", at(5), map[string]any{"jwk": alice3.jwk()}), alice1)
		}, ""},
		{"alice joins with a3 again", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.join", at(5), map[string]any{"jwk": alice3.jwk()}), alice1)
		}, ledger.CodeBadKey},
		{"rotate a1→a2 signed by the new key a2", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.rotate_key", at(10), map[string]any{"old_kid": "a1", "new_jwk": alice2.jwk()}), alice2)
		}, ledger.CodeUnauthorized},
		{"rotate a1→a2 signed by another valid kid a3", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.rotate_key", at(10), map[string]any{"old_kid": "a1", "new_jwk": alice2.jwk()}), alice3)
		}, ledger.CodeUnauthorized},
		{"rotate a1→a2 signed by bob", func(t testing.TB) []byte {
			return signed(t, envelope(bob1.uri, "participant.rotate_key", at(10), map[string]any{"old_kid": "a1", "new_jwk": alice2.jwk()}), bob1)
		}, ledger.CodeUnauthorized},
		{"rotate with a private JWK", func(t testing.TB) []byte {
			j := map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "a2", "x": alice2.jwk()["x"], "d": "AAAA"}
			return signed(t, envelope(alice1.uri, "participant.rotate_key", at(10), map[string]any{"old_kid": "a1", "new_jwk": j}), alice1)
		}, ledger.CodeBadKey},
		{"rotate a1→a2 signed by a1", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.rotate_key", at(10), map[string]any{"old_kid": "a1", "new_jwk": alice2.jwk()}), alice1)
		}, ""},
		{"a2 works after the rotation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 11), alice2) }, ""},
		{"a2 is not valid before the rotation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 9), alice2) }, ledger.CodeKeyNotValid},
		{"a1 refused at the rotation time", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 10), alice1) }, ledger.CodeKeyNotValid},
		{"a1 refused after the rotation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 11), alice1) }, ledger.CodeKeyNotValid},
		{"a1 still valid before the rotation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 9), alice1) }, ""},
		{"a1 cannot rotate again", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.rotate_key", at(12), map[string]any{"old_kid": "a1", "new_jwk": newSigner(alice1.uri, "a9").jwk()}), alice1)
		}, ledger.CodeKeyNotValid},
		{"carol joins (no role)", func(t testing.TB) []byte {
			return signed(t, envelope(carol1.uri, "participant.join", at(12), map[string]any{"jwk": carol1.jwk()}), carol1)
		}, ""},
		{"carol (not admin) revokes alice's a3", func(t testing.TB) []byte {
			return signed(t, envelope(carol1.uri, "participant.revoke_key", at(13), map[string]any{"participant": alice1.uri, "kid": "a3"}), carol1)
		}, ledger.CodeUnauthorized},
		{"carol declares herself admin in a later keyless join", func(t testing.TB) []byte {
			return signed(t, envelope(carol1.uri, "participant.join", at(13), map[string]any{"role": "admin"}), carol1)
		}, ledger.CodeRoleDenied},
		{"a keyless join by a stranger changes carol's role", func(t testing.TB) []byte {
			return raw(t, envelope("human:guest", "participant.join", at(13), map[string]any{"uri": carol1.uri, "role": "reviewer"}))
		}, ledger.CodeRoleDenied},
		{"carol re-joins without a role (keeps hers)", func(t testing.TB) []byte {
			return signed(t, envelope(carol1.uri, "participant.join", at(13), map[string]any{}), carol1)
		}, ""},
		{"a new member declares itself admin", func(t testing.TB) []byte {
			return signed(t, envelope(admin1.uri, "participant.join", at(14), map[string]any{"jwk": admin1.jwk(), "role": "admin"}), admin1)
		}, ledger.CodeRoleDenied},
		{"carol (not admin) grants admin to a new member", func(t testing.TB) []byte {
			return signed(t, envelope(carol1.uri, "participant.join", at(14), map[string]any{"uri": admin1.uri, "jwk": admin1.jwk(), "role": "admin"}), carol1)
		}, ledger.CodeRoleDenied},
		{"an unsigned join grants admin", func(t testing.TB) []byte {
			return raw(t, envelope("human:guest", "participant.join", at(14), map[string]any{"uri": admin1.uri, "jwk": admin1.jwk(), "role": "admin"}))
		}, ledger.CodeRoleDenied},
		{"admin alice grants admin to root (join signed by alice)", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.join", at(14), map[string]any{"uri": admin1.uri, "jwk": admin1.jwk(), "role": "admin"}), alice2)
		}, ""},
		{"unsigned revoke", func(t testing.TB) []byte {
			return raw(t, envelope("human:guest", "participant.revoke_key", at(15), map[string]any{"participant": alice1.uri, "kid": "a3"}))
		}, ledger.CodeUnauthorized},
		{"admin revokes an unknown kid", func(t testing.TB) []byte {
			return signed(t, envelope(admin1.uri, "participant.revoke_key", at(15), map[string]any{"participant": alice1.uri, "kid": "nope"}), admin1)
		}, ledger.CodeUnknownKey},
		{"admin revokes alice's a3", func(t testing.TB) []byte {
			return signed(t, envelope(admin1.uri, "participant.revoke_key", at(20), map[string]any{"participant": alice1.uri, "kid": "a3"}), admin1)
		}, ""},
		{"a3 refused at the revocation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 20), alice3) }, ledger.CodeKeyNotValid},
		{"a3 refused after the revocation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 21), alice3) }, ledger.CodeKeyNotValid},
		{"a3 backdated before the revocation (revocation is present-tense)", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 19), alice3) }, ledger.CodeKeyNotValid},
		{"alice revokes her own a2", func(t testing.TB) []byte {
			return signed(t, envelope(alice1.uri, "participant.revoke_key", at(30), map[string]any{"kid": "a2"}), alice2)
		}, ""},
		{"a2 refused at its revocation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 30), alice2) }, ledger.CodeKeyNotValid},
		{"a2 refused after its revocation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 40), alice2) }, ledger.CodeKeyNotValid},
		{"a2 backdated before its revocation", func(t testing.TB) []byte { return signed(t, msg(alice1.uri, 29), alice2) }, ledger.CodeKeyNotValid},
		{"bob still signs", func(t testing.TB) []byte { return signed(t, msg(bob1.uri, 41), bob1) }, ""},
	}
}

func newKeysChain(t testing.TB) *ledger.Chain {
	c, err := ledger.NewChain(ws, Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestKeyLifecycle(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle())
	// The key history as the state holds it.
	keys := c.State.(*State).Keys
	if got := len(keys.Members()); got != 4 {
		t.Fatalf("%d participants, want 4", got)
	}
	a := keys.Participants[alice1.uri]
	if len(a.Keys) != 3 || !a.Keys[0].Until.Equal(at(10)) || a.Keys[0].Revoked || !a.Keys[1].Revoked || !a.Keys[1].Until.Equal(at(20)) ||
		!a.Keys[2].From.Equal(at(10)) || !a.Keys[2].Until.Equal(at(30)) || !a.Keys[2].Revoked {
		t.Fatalf("alice's keys %+v", a.Keys)
	}
	if keys.Participants[admin1.uri].Role != "admin" {
		t.Fatal("admin role lost")
	}
}

func TestAdmissionVerify(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle()[:2])
	a, err := c.Clone().Append(signed(t, msg(alice1.uri, 3), alice1), t0)
	if err != nil || !a.Admission.Signed || a.Admission.Verify == nil {
		t.Fatalf("signed admission %+v, %v", a, err)
	}
	if err := a.Admission.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	m := msg(alice1.uri, 3)
	signed(t, m, alice1)
	m["to"] = "someone-else"
	a, err = c.Clone().Append(raw(t, m), t0)
	if err != nil {
		t.Fatal(err)
	}
	var re *ledger.RecordError
	if err := a.Admission.Verify(); !errors.As(err, &re) || re.Code != ledger.CodeBadSignature {
		t.Fatalf("Verify of a tampered envelope = %v", err)
	}
	if a.Admission.Sender != alice1.uri || a.Admission.Method != "task.update" || !a.Admission.TS.Equal(at(3)) || a.Admission.RecordID == "" {
		t.Fatalf("admission fields %+v", a.Admission)
	}
}

func TestChainRules(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle()[:2])
	head := c.Head
	wrong := ledger.NextLink([]byte("elsewhere"), ledger.Genesis)
	steps := []step{
		{"workspace mismatch", func(t testing.TB) []byte {
			m := msg(alice1.uri, 3)
			m["workspace"] = "wsp_other"
			return signed(t, m, alice1)
		}, ledger.CodeWrongChain},
		{"workspace mismatch in params", func(t testing.TB) []byte {
			m := msg("human:guest", 3)
			delete(m, "workspace")
			m["params"] = map[string]any{"workspace_id": "wsp_other"}
			return raw(t, m)
		}, ledger.CodeWrongChain},
		{"bad ts", func(t testing.TB) []byte {
			m := msg(alice1.uri, 3)
			m["ts"] = "yesterday"
			return signed(t, m, alice1)
		}, ledger.CodeBadTimestamp},
		{"malformed prev_hash", func(t testing.TB) []byte {
			m := msg(alice1.uri, 3)
			m["evidence"] = map[string]any{"prev_hash": strings.ToUpper(head.String())}
			return signed(t, m, alice1)
		}, ledger.CodeMalformed},
		{"prev_hash at head", func(t testing.TB) []byte {
			m := msg(alice1.uri, 3)
			m["evidence"] = map[string]any{"prev_hash": head.String()}
			return signed(t, m, alice1)
		}, ""},
	}
	runSteps(t, &c, steps)

	m := msg(alice1.uri, 4)
	m["evidence"] = map[string]any{"prev_hash": wrong.String()}
	err := submit(&c, signed(t, m, alice1))
	var pm *ledger.PrevMismatchError
	if codeOf(err) != ledger.CodePrevMismatch || !errors.As(err, &pm) || pm.Named != wrong || pm.Head != c.Head {
		t.Fatalf("prev_hash mismatch = %v", err)
	}
	m = msg(alice1.uri, 4)
	m["evidence"] = map[string]any{"prev_hash": head.String()} // the old head: no longer the head
	if err := submit(&c, signed(t, m, alice1)); !errors.As(err, &pm) || pm.Named != head {
		t.Fatalf("stale prev_hash = %v", err)
	}
	c.Closed = true
	if err := submit(&c, signed(t, msg(alice1.uri, 5), alice1)); codeOf(err) != ledger.CodeClosed {
		t.Fatalf("closed chain: %v", err)
	}
}

func TestStrictJSON(t *testing.T) {
	base := `{"jsonrpc":"2.0","id":"x","method":"m","from":"human:guest","workspace":"` + ws + `","params":{"n":%s}}`
	cases := []struct {
		name string
		in   string
		want ledger.Code
	}{
		{"ok", fmt.Sprintf(base, "1"), ""},
		{"max safe integer", fmt.Sprintf(base, "9007199254740991"), ""},
		{"min safe integer", fmt.Sprintf(base, "-9007199254740991"), ""},
		{"duplicate key", `{"jsonrpc":"2.0","id":"x","id":"y","method":"m"}`, ledger.CodeMalformed},
		{"nested duplicate key", fmt.Sprintf(base, `{"a":1,"a":1}`), ledger.CodeMalformed},
		{"fraction", fmt.Sprintf(base, "1.5"), ledger.CodeNumber},
		{"2^53", fmt.Sprintf(base, "9007199254740992"), ledger.CodeNumber},
		{"-2^53", fmt.Sprintf(base, "-9007199254740992"), ledger.CodeNumber},
		{"exponent", fmt.Sprintf(base, "1e400"), ledger.CodeNumber},
		{"trailing garbage", fmt.Sprintf(base, "1") + "x", ledger.CodeMalformed},
		{"trailing comma", `{"jsonrpc":"2.0","method":"m",}`, ledger.CodeMalformed},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"method\":\"m\xff\"}", ledger.CodeMalformed},
		{"lone surrogate", `{"jsonrpc":"2.0","method":"\ud800"}`, ledger.CodeMalformed},
		{"not an object", `["jsonrpc"]`, ledger.CodeMalformed},
		{"no jsonrpc", `{"method":"m"}`, ledger.CodeMalformed},
		{"no method and no result", `{"jsonrpc":"2.0","id":1}`, ledger.CodeMalformed},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, ""},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"m"}`, ledger.CodeMalformed},
		{"empty method", `{"jsonrpc":"2.0","method":""}`, ledger.CodeMalformed},
		// The record limits (--max-depth, --max-record-bytes) are the service's policy, applied
		// before the profile (canonical.Limits.Check); the profile's parser stops at the caps.
		{"deeper than the cap", `{"jsonrpc":"2.0","method":"m","pad":` + strings.Repeat("[", canonical.MaxDepthCap) + strings.Repeat("]", canonical.MaxDepthCap) + `}`, ledger.CodeTooLarge},
		{"80 levels and 1.1 MB, as the reference Coordinators log", `{"jsonrpc":"2.0","method":"m","deep":` + strings.Repeat("[", 79) + strings.Repeat("]", 79) +
			`,"pad":"` + strings.Repeat("a", 1100000) + `"}`, ""},
		{"sig not a string", `{"jsonrpc":"2.0","method":"m","sig":1}`, ledger.CodeSignatureFormat},
		{"refusal without request", `{"outcome":{}}`, ledger.CodeMalformed},
		{"refusal with an extra member", `{"outcome":{},"request":{},"note":1}`, ledger.CodeMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, perr := Parse([]byte(c.in))
			ch := newKeysChain(t)
			err := submit(&ch, []byte(c.in))
			if codeOf(err) != c.want {
				t.Fatalf("code %q (%v), want %q", codeOf(err), err, c.want)
			}
			if c.want != "" && c.want != ledger.CodeWrongChain && codeOf(perr) != c.want {
				t.Fatalf("Parse code %q, want %q", codeOf(perr), c.want)
			}
		})
	}
}

func TestStateRoundTrip(t *testing.T) {
	steps := lifecycle()
	c := newKeysChain(t)
	runSteps(t, &c, steps[:30]) // up to and including the admin's join
	js, err := c.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	st, err := Adapter{}.NewState(js)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.MarshalJSON()
	if err != nil || string(again) != string(js) {
		t.Fatalf("state JSON not stable:\n%s\n%s", js, again)
	}
	restored := &ledger.Chain{ID: c.ID, Profile: c.Profile, Size: c.Size, Head: c.Head, Tree: c.Tree.Clone(), State: st}
	// The rest of the lifecycle gives the same answers and the same links on both
	// (the same bytes are submitted to both chains).
	var rest []step
	for _, s := range steps[30:] {
		b := s.rec(t)
		rest = append(rest, step{s.name, func(testing.TB) []byte { return b }, s.want})
	}
	runSteps(t, &c, rest)
	runSteps(t, &restored, rest)
	if c.Head != restored.Head || c.Root() != restored.Root() {
		t.Fatal("restored chain diverged")
	}
	// Empty and junk persisted states.
	if st, err := (Adapter{}).NewState([]byte(`{}`)); err != nil || st.(*State).Keys == nil {
		t.Fatalf("empty persisted state: %v", err)
	}
	if _, err := (Adapter{}).NewState([]byte(`{"keys":`)); err == nil {
		t.Fatal("junk state accepted")
	}
}

func TestCloneIsolation(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle()[:2])
	cl := c.Clone()
	if err := submit(&cl, signed(t, envelope(alice1.uri, "participant.rotate_key", at(10), map[string]any{"old_kid": "a1", "new_jwk": alice2.jwk()}), alice1)); err != nil {
		t.Fatal(err)
	}
	// The rotation happened only on the clone.
	if err := submit(&c, signed(t, msg(alice1.uri, 11), alice1)); err != nil {
		t.Fatalf("original chain sees the clone's rotation: %v", err)
	}
	if err := submit(&cl, signed(t, msg(alice1.uri, 11), alice1)); codeOf(err) != ledger.CodeKeyNotValid {
		t.Fatalf("clone: %v", err)
	}
}

func TestJoinKeyRules(t *testing.T) {
	d1 := newSigner("human:dora", "d1")
	other := newSigner("human:dora", "d1-other") // same kid below, another key
	dup := other.jwk()
	dup["kid"] = "d1"
	steps := []step{
		{"one join carrying the same kid twice", func(t testing.TB) []byte {
			return raw(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"keys": []any{d1.jwk(), dup}}))
		}, ledger.CodeBadKey},
		{"keys not an array", func(t testing.TB) []byte {
			return raw(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"keys": d1.jwk()}))
		}, ledger.CodeBadKey},
		{"JWK of another curve", func(t testing.TB) []byte {
			j := d1.jwk()
			j["crv"] = "X25519"
			return raw(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"jwk": j}))
		}, ledger.CodeBadKey},
		{"JWK x too short", func(t testing.TB) []byte {
			j := d1.jwk()
			j["x"] = "AAAA"
			return raw(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"jwk": j}))
		}, ledger.CodeBadKey},
		{"JWK without kid", func(t testing.TB) []byte {
			j := d1.jwk()
			delete(j, "kid")
			return raw(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"jwk": j}))
		}, ledger.CodeBadKey},
		{"self-signed join signed by a kid the join does not carry", func(t testing.TB) []byte {
			return signed(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"jwk": d1.jwk()}), other)
		}, ledger.CodeUnknownKey},
		{"self-signed join with a wrong signature", func(t testing.TB) []byte {
			return signed(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"jwk": d1.jwk()}), &signer{uri: d1.uri, kid: "d1", priv: other.priv})
		}, ledger.CodeBadSignature},
		{"two keys in one join", func(t testing.TB) []byte {
			return raw(t, envelope(d1.uri, "participant.join", at(0), map[string]any{"keys": []any{d1.jwk(), other.jwk()}}))
		}, ""},
		{"either key signs", func(t testing.TB) []byte { return signed(t, msg(d1.uri, 1), other) }, ""},
		{"rotate without ts", func(t testing.TB) []byte {
			m := envelope(d1.uri, "participant.rotate_key", at(2), map[string]any{"old_kid": "d1", "new_jwk": newSigner(d1.uri, "d2").jwk()})
			delete(m, "ts")
			return signed(t, m, d1)
		}, ledger.CodeBadTimestamp},
		{"rotate without new_jwk", func(t testing.TB) []byte {
			return signed(t, envelope(d1.uri, "participant.rotate_key", at(2), map[string]any{"old_kid": "d1"}), d1)
		}, ledger.CodeMalformed},
		{"rotate to an existing kid", func(t testing.TB) []byte {
			return signed(t, envelope(d1.uri, "participant.rotate_key", at(2), map[string]any{"old_kid": "d1", "new_jwk": other.jwk()}), d1)
		}, ledger.CodeBadKey},
		{"revoke without kid", func(t testing.TB) []byte {
			return signed(t, envelope(d1.uri, "participant.revoke_key", at(2), nil), d1)
		}, ledger.CodeMalformed},
	}
	c := newKeysChain(t)
	runSteps(t, &c, steps)
}

// TestAdmissionVerifyHoldsNoRecord: an Admission's Verify, which a replay queues for its
// signature workers, keeps neither the parsed record nor its value tree alive, and still
// names the sender when the signature does not verify.
func TestAdmissionVerifyHoldsNoRecord(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle()[:2])
	m := msg(alice1.uri, 3)
	signed(t, m, alice1)
	m["to"] = "someone-else" // the signature no longer covers the envelope
	r, err := Parse(raw(t, m))
	if err != nil {
		t.Fatal(err)
	}
	adm, err := c.State.(*State).AdmitRecord(ledger.Position{Chain: c.ID, Head: c.Head, Seq: c.Size, Replay: true}, r)
	if err != nil || adm.Verify == nil {
		t.Fatalf("AdmitRecord = %+v, %v", adm, err)
	}
	collected := make(chan struct{})
	runtime.AddCleanup(r, func(ch chan struct{}) { close(ch) }, collected)
	r = nil
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-collected:
			done = true
		case <-deadline:
			t.Fatal("the parsed record is still reachable from its Admission's Verify")
		case <-time.After(10 * time.Millisecond):
		}
	}
	var re *ledger.RecordError
	if err := adm.Verify(); !errors.As(err, &re) || re.Code != ledger.CodeBadSignature || !strings.Contains(err.Error(), alice1.uri) {
		t.Fatalf("Verify of a tampered envelope = %v", err)
	}
}

// TestSignatureCheckDecodedKey: the keys of a keyring, whether introduced by joins or read
// back from the persisted state, carry their decoded point, and the checks made from them
// use it; a check whose Public no longer matches it, or whose key is not a curve point,
// gets crypto/ed25519's verdict.
func TestSignatureCheckDecodedKey(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle()[:2])
	js, err := c.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := Adapter{}.NewState(js)
	if err != nil {
		t.Fatal(err)
	}
	for name, keys := range map[string]*Keyring{"admitted": c.State.(*State).Keys, "restored": restored.(*State).Keys} {
		n := 0
		for _, p := range keys.Participants {
			for _, k := range p.Keys {
				if k.decoded == nil || !k.decoded.Is(k.Public) {
					t.Fatalf("%s: key %s of %s is not decoded", name, k.Kid, p.URI)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: no keys", name)
		}
		r, err := Parse(signed(t, msg(alice1.uri, 3), alice1))
		if err != nil {
			t.Fatal(err)
		}
		check, err := keys.Clone().AdmitAt(c.Size+1, r)
		if err != nil || check == nil || check.key == nil {
			t.Fatalf("%s: check %+v, %v", name, check, err)
		}
		if !check.Verify() {
			t.Fatalf("%s: alice's signature does not verify", name)
		}
		tampered := *check
		tampered.Value = append([]byte(nil), check.Value...)
		tampered.Value[5] ^= 1
		if tampered.Verify() {
			t.Fatalf("%s: a tampered signature verifies", name)
		}
		// Public changed after the check was made: the decoded key no longer applies.
		other := newSigner("human:mallory", "m1")
		swapped := *check
		swapped.Public = other.priv.Public().(ed25519.PublicKey)
		if swapped.Verify() {
			t.Fatalf("%s: alice's signature verifies under another Public", name)
		}
		swapped.Value = ed25519.Sign(other.priv, check.Message)
		if !swapped.Verify() {
			t.Fatalf("%s: the other key's signature does not verify under its Public", name)
		}
	}
	// A 32-byte key that is not a point on the curve verifies nothing.
	notPoint := make(ed25519.PublicKey, ed25519.PublicKeySize)
	notPoint[0] = 2
	k := newKey("np", notPoint)
	if k.decoded != nil {
		t.Fatal("a key that is not a point was decoded")
	}
	check := &SignatureCheck{Kid: "np", Public: k.Public, key: k.decoded, Message: []byte("m"), Value: make([]byte, ed25519.SignatureSize)}
	if check.Verify() {
		t.Fatal("a signature verifies under a key that is not a point")
	}
}
