package cop_test

import (
	"bytes"
	"crypto"
	"errors"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/internal/testkeys"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/cop"
)

const topic = "urn:cop:topic:claim-4711"

var start = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

func code(err error) ledger.Code {
	var re *ledger.RecordError
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

func run(t *testing.T, recs [][]byte) (*ledger.Chain, error) {
	t.Helper()
	c, _ := ledger.NewChain(topic, cop.Adapter{})
	for _, r := range recs {
		a, err := c.Append(r, start)
		if err != nil {
			return c, err
		}
		if a.Admission.Verify != nil {
			if err := a.Admission.Verify(); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

func TestClaimsTopic(t *testing.T) {
	recs, err := copscenario.ClaimsTopic(topic, start)
	if err != nil {
		t.Fatal(err)
	}
	c, err := run(t, recs)
	if err != nil {
		t.Fatal(err)
	}
	if f := c.State.(ledger.Auditor).Findings(); len(f) != 0 {
		t.Fatalf("findings %+v", f)
	}
	// A parent in another Topic cannot be evaluated from this chain: a notice.
	if _, err := run2(c, ev(t, 7, "late-note", []string{"urn:cop:event:fraud-screening:88"})); err != nil {
		t.Fatal(err)
	}
	f := c.State.(ledger.Auditor).Findings()
	if len(f) != 1 || f[0].Code != cop.CodeParentAbsent || f[0].Severity != ledger.Notice || f[0].Seq != 7 {
		t.Fatalf("findings %+v, want one notice for the cross-topic parent at seq 7", f)
	}
}

func ev(t *testing.T, seq int, id string, parents []string) []byte {
	o, err := copscenario.Event(topic, seq, id, "note", start, map[string]any{"n": seq}, parents, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := canonical.Encode(o)
	return b
}

func TestRules(t *testing.T) {
	recs, _ := copscenario.ClaimsTopic(topic, start)
	altered := bytes.Replace(recs[3], []byte(`"confidence":0.82`), []byte(`"confidence":0.99`), 1)
	// A signed event whose copHash was recomputed after the change: the signature catches it.
	resigned := func() []byte {
		o, _ := copscenario.Event(topic, 3, "urn:cop:event:"+topic+":3", "agent.reply", start, map[string]any{"x": 1}, nil, false)
		v, _ := canonical.Parse(recs[3], canonical.Options{})
		sig, _ := v.(*canonical.Object).Get("signature")
		o.Members = append(o.Members, canonical.Member{Key: "signature", Value: sig})
		b, _ := canonical.Encode(o)
		return b
	}()
	hashOnlyAltered := bytes.Replace(recs[1], []byte(`HOME-22-0931`), []byte(`HOME-22-0932`), 1)
	other, _ := copscenario.Event("urn:cop:topic:other", 7, "x", "note", start, map[string]any{}, nil, false)
	otherB, _ := canonical.Encode(other)
	cases := []struct {
		name  string
		after int
		rec   []byte
		want  ledger.Code
	}{
		{"topicSeq gap", 7, ev(t, 8, "gap", nil), cop.CodeTopicSeq},
		{"topicSeq repeat", 7, ev(t, 6, "rep", nil), cop.CodeTopicSeq},
		{"first topicSeq 2", 0, ev(t, 2, "first", nil), cop.CodeTopicSeq},
		{"copHash mismatch", 1, hashOnlyAltered, ledger.CodeDigestMismatch},
		{"altered signed event", 3, altered, ledger.CodeDigestMismatch},
		{"other topic", 7, otherB, ledger.CodeWrongChain},
		{"signature over other content", 3, resigned, ledger.CodeBadSignature},
		{"self parent", 7, ev(t, 7, "selfish", []string{"selfish"}), cop.CodeParentCycle},
		{"cloudevent without specversion 1.0", 7, []byte(`{"specversion":"0.3","id":"a","type":"t","subject":"` + topic + `","time":"2026-03-02T08:00:00Z","copTopicSeq":7}`), ledger.CodeMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := run(t, recs[:tc.after])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := run2(c, tc.rec); code(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func run2(c *ledger.Chain, rec []byte) (*ledger.Appended, error) {
	a, err := c.Append(rec, start)
	if err != nil {
		return nil, err
	}
	if a.Admission.Verify != nil {
		return a, a.Admission.Verify()
	}
	return a, nil
}

// TestForwardParent: a parent that arrives after its child is a critical finding.
func TestForwardParent(t *testing.T) {
	c, err := run(t, [][]byte{ev(t, 0, "a", []string{"b"}), ev(t, 1, "b", nil)})
	if err != nil {
		t.Fatal(err)
	}
	f := c.State.(ledger.Auditor).Findings()
	if len(f) != 1 || f[0].Code != cop.CodeParentCycle || f[0].Severity != ledger.Critical || f[0].Seq != 0 {
		t.Fatalf("findings %+v", f)
	}
}

// TestLedger: Evident's own ledger and an imported one (another node, ECDSA P-256) verify;
// any altered record breaks at that record.
func TestLedger(t *testing.T) {
	recs, _ := copscenario.ClaimsTopic(topic, start)
	events := map[string][]byte{}
	for _, r := range recs {
		e, _ := cop.Parse(r)
		events[e.ID] = r
	}
	for _, node := range []cop.Node{
		{ID: "urn:cop:node:evident", KeyID: "urn:cop:key:evident", Signer: testkeys.Ed25519("evident-node")},
		{ID: "urn:cop:node:beta", KeyID: "urn:cop:key:beta", Signer: testkeys.P256("cop-beta")},
	} {
		w := cop.NewLedgerWriter(node)
		var lines [][]byte
		for i, r := range recs {
			l, err := w.Append(r, start.Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		keys := map[string]crypto.PublicKey{node.KeyID: node.Signer.Public()}
		chk := &cop.LedgerCheck{Keys: keys, RequireSignature: true, Events: events}
		for i, l := range lines {
			if err := chk.Next(l); err != nil {
				t.Fatalf("%s record %d: %v", node.ID, i, err)
			}
		}
		if chk.Matched != len(recs) {
			t.Fatalf("matched %d", chk.Matched)
		}
		for _, tamper := range []struct {
			name string
			at   int
			f    func([]byte) []byte
		}{
			{"createdAt", 3, func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"createdAt":"2026`), []byte(`"createdAt":"2025`), 1)
			}},
			{"index", 2, func(b []byte) []byte { return bytes.Replace(b, []byte(`"index":2`), []byte(`"index":9`), 1) }},
			{"eventHash", 5, func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"eventHash":{"alg":"sha-256","value":"`), []byte(`"eventHash":{"alg":"sha-256","value":"0`), 1)[:len(b)]
			}},
		} {
			chk := &cop.LedgerCheck{Keys: keys, RequireSignature: true, Events: events}
			var err error
			for i, l := range lines {
				if i == tamper.at {
					l = tamper.f(bytes.Clone(l))
				}
				if err = chk.Next(l); err != nil {
					break
				}
			}
			var le *cop.LedgerError
			if !errors.As(err, &le) || le.Index != tamper.at {
				t.Errorf("%s: tampered %s: %v, want a break at %d", node.ID, tamper.name, err, tamper.at)
			}
		}
	}
}
