package owp

import (
	"crypto"
	"errors"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Profile is the profile name of OWP-2 Audit Envelope chains.
const Profile = "owp/2"

// Version is the value of the "owp" member every event carries.
const Version = "2"

// Event types of this binding (OWP-2 §9.1 as Evident binds it; docs/profiles/owp.md).
const (
	WorkerKeyBound                      = "WorkerKeyBound"
	SignalReceived                      = "SignalReceived"
	IntentCreated                       = "IntentCreated"
	IntentAccepted                      = "IntentAccepted"
	IntentEscalated                     = "IntentEscalated"
	IntentDispatched                    = "IntentDispatched"
	IntentResolved                      = "IntentResolved"
	CapabilityInvoked                   = "CapabilityInvoked"
	AuthorityViolation                  = "AuthorityViolation"
	KnowledgeBaseRegistered             = "KnowledgeBaseRegistered"
	KnowledgeBaseVersionCreated         = "KnowledgeBaseVersionCreated"
	KnowledgeBaseCurrentPointerMoved    = "KnowledgeBaseCurrentPointerMoved"
	KnowledgeBaseRetentionPolicyChanged = "KnowledgeBaseRetentionPolicyChanged"
	KnowledgeBaseRetired                = "KnowledgeBaseRetired"
	KnowledgeContributionProposed       = "KnowledgeContributionProposed"
	KnowledgeContributionAccepted       = "KnowledgeContributionAccepted"
	KnowledgeContributionRejected       = "KnowledgeContributionRejected"
)

// EventTypes lists every event type the binding accepts.
var EventTypes = []string{WorkerKeyBound, SignalReceived, IntentCreated, IntentAccepted, IntentEscalated, IntentDispatched,
	IntentResolved, CapabilityInvoked, AuthorityViolation, KnowledgeBaseRegistered, KnowledgeBaseVersionCreated,
	KnowledgeBaseCurrentPointerMoved, KnowledgeBaseRetentionPolicyChanged, KnowledgeBaseRetired,
	KnowledgeContributionProposed, KnowledgeContributionAccepted, KnowledgeContributionRejected}

// Outcomes of a resolved Intent (§3.4.2, §6.6).
var Outcomes = []string{"achieved", "refused", "abandoned"}

// Event is one parsed Audit Envelope event.
type Event struct {
	Object    *canonical.Object
	Canonical []byte // JCS of the event as received (sig included): what the chain link hashes
	ID        string
	Envelope  string
	Type      string
	TS        time.Time
	Actor     string
	Payload   *canonical.Object
	Prev      *ledger.Link
	Sig       *sigalg.Signature // nil when unsigned (refused at admission)
}

// Parse parses one event under strict JSON (general RFC 8785 numbers: OWP payloads carry decimals).
func Parse(data []byte) (*Event, error) {
	v, err := canonical.Parse(data, canonical.Options{})
	if err != nil {
		return nil, ledger.CanonicalRefusal(err)
	}
	obj, ok := v.(*canonical.Object)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "an OWP event is a JSON object")
	}
	e := &Event{Object: obj}
	if ver, _ := obj.String("owp"); ver != Version {
		return nil, ledger.Refuse(ledger.CodeMalformed, `an OWP-2 event carries "owp": "2"`)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"event_id", &e.ID}, {"envelope", &e.Envelope}, {"type", &e.Type}, {"actor", &e.Actor}} {
		s, ok := obj.String(f.name)
		if !ok || s == "" {
			return nil, ledger.Refuse(ledger.CodeMalformed, "event member %q must be a non-empty string", f.name)
		}
		*f.dst = s
	}
	ts, _ := obj.String("ts")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, ledger.Refuse(ledger.CodeBadTimestamp, "ts %.40q is not RFC 3339", ts)
	}
	e.TS = t
	if pv, ok := obj.Get("payload"); ok {
		p, isObj := pv.(*canonical.Object)
		if !isObj || p == nil {
			return nil, ledger.Refuse(ledger.CodeMalformed, "payload must be an object")
		}
		e.Payload = p
	} else {
		e.Payload = &canonical.Object{}
	}
	if pv, ok := obj.Get("prev"); ok {
		s, isStr := pv.(string)
		l, err := ledger.ParseLink(s)
		if !isStr || err != nil {
			return nil, ledger.Refuse(ledger.CodeMalformed, "prev must be a link \"sha256:<hex>\"")
		}
		e.Prev = &l
	}
	if sv, ok := obj.Get("sig"); ok {
		so, _ := sv.(*canonical.Object)
		sig, err := sigalg.ParseSignature(so, "kid")
		if err != nil {
			return nil, &ledger.RecordError{Code: ledger.CodeSignatureFormat, Detail: "sig: " + err.Error(), Err: err}
		}
		e.Sig = sig
	}
	c, err := canonical.Encode(obj)
	if err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "canonical encoding: %v", err)
	}
	e.Canonical = c
	return e, nil
}

// SigningInput is JCS(event − sig): the bytes an event signature covers.
func (e *Event) SigningInput() ([]byte, error) { return canonical.Encode(e.Object.Without("sig")) }

// ParseWorkerID splits worker:<authority>:<workforce-id>:<local-id> (§3.1.2).
func ParseWorkerID(s string) (authority, workforce, local string, err error) {
	p := strings.Split(s, ":")
	if len(p) != 4 || p[0] != "worker" || p[1] == "" || p[2] == "" || p[3] == "" {
		return "", "", "", errors.New("a Worker ID is worker:<authority>:<workforce-id>:<local-id>")
	}
	return p[1], p[2], p[3], nil
}

// ParseEnvelopeID splits envelope:<workforce-id>:<envelope-id> (§3.6.2).
func ParseEnvelopeID(s string) (workforce, id string, err error) {
	p := strings.Split(s, ":")
	if len(p) != 3 || p[0] != "envelope" || p[1] == "" || p[2] == "" {
		return "", "", errors.New("an Audit Envelope URI is envelope:<workforce-id>:<envelope-id>")
	}
	return p[1], p[2], nil
}

// Sign adds a sig member to an unsigned event object (producer side: scenarios and vectors).
func Sign(ev *canonical.Object, priv crypto.Signer, alg, kid string) (*canonical.Object, error) {
	in, err := canonical.Encode(ev.Without("sig"))
	if err != nil {
		return nil, err
	}
	v, err := sigalg.Sign(priv, alg, in)
	if err != nil {
		return nil, err
	}
	out := ev.Without("sig")
	out.Members = append(out.Members, canonical.Member{Key: "sig", Value: (&sigalg.Signature{Alg: alg, Kid: kid, Value: v}).Object("kid")})
	return out, nil
}
