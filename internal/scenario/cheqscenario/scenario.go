// Package cheqscenario builds a realistic CHEQ confirmation chain for tests, the demo and the
// published vectors: an airline's resource server (ECDSA P-256) and a confirmation server
// (Ed25519) declare their keys; a flight booking is accepted, a seat upgrade rejected, and a
// funds transfer confirmed in privacy mode (only the CHEQ hash is logged).
package cheqscenario

import (
	"crypto"
	"encoding/json"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/internal/testkeys"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/cheq"
)

// Server is a signing party.
type Server struct {
	Kid string
	Alg string
	Key crypto.Signer
}

// Servers of the scenario.
var (
	Resource           = Server{Kid: "airline-rs-2025", Alg: sigalg.ECDSAP256SHA256, Key: testkeys.P256("cheq-resource")}
	ConfirmationServer = Server{Kid: "confirm-2025", Alg: sigalg.Ed25519, Key: testkeys.Ed25519("cheq-confirmation")}
)

func obj(v any) *canonical.Object {
	b, _ := json.Marshal(v)
	o, err := canonical.Parse(b, canonical.Options{})
	if err != nil {
		panic(err)
	}
	return o.(*canonical.Object)
}

func sign(s Server, msg []byte) *canonical.Object {
	v, err := sigalg.Sign(s.Key, s.Alg, msg)
	if err != nil {
		panic(err)
	}
	return (&sigalg.Signature{Alg: s.Alg, Kid: s.Kid, Value: v}).Object("kid")
}

// Keys returns the cheq.keys record.
func Keys() []byte {
	var ks []canonical.Value
	for _, s := range []struct {
		role string
		srv  Server
	}{{cheq.RoleResource, Resource}, {cheq.RoleConfirmation, ConfirmationServer}} {
		jwk, _ := sigalg.JWK(s.srv.Key.Public())
		k := &canonical.Object{Members: []canonical.Member{{Key: "role", Value: s.role}, {Key: "kid", Value: s.srv.Kid}, {Key: "jwk", Value: jwk}}}
		in, _ := canonical.Encode(k)
		k.Members = append(k.Members, canonical.Member{Key: "sig", Value: sign(s.srv, in)})
		ks = append(ks, k)
	}
	b, _ := canonical.Encode(&canonical.Object{Members: []canonical.Member{{Key: "kind", Value: cheq.KindKeys}, {Key: "keys", Value: ks}}})
	return b
}

// Confirmation builds a cheq.confirmation record for the CHEQ object c, confirmed under id
// with decision by user at t; private omits the CHEQ object (privacy mode).
func Confirmation(c map[string]any, id, decision, user string, t time.Time, private bool) []byte {
	co := obj(c)
	h, _ := cheq.Hash(co)
	conf := obj(map[string]any{"id": id, "cheq_hash": h, "decision": decision, "confirmed_at": ledger.Timestamp(t), "user": user})
	cin, _ := canonical.Encode(conf)
	conf.Members = append(conf.Members, canonical.Member{Key: "sig", Value: sign(ConfirmationServer, cin)})
	rec := &canonical.Object{Members: []canonical.Member{{Key: "kind", Value: cheq.KindConfirmation}, {Key: "cheq_hash", Value: h},
		{Key: "resource_sig", Value: sign(Resource, cheq.ResourceSigningInput(h))}, {Key: "confirmation", Value: conf}}}
	if !private {
		rec.Members = append(rec.Members, canonical.Member{Key: "cheq", Value: co})
	}
	b, _ := canonical.Encode(rec)
	return b
}

// FlightBooking is the CHEQ object of the draft's Figure 4.
func FlightBooking() map[string]any {
	return map[string]any{"version": 1.0, "operation": "https://airline.com/api/v1/book-flight", "operation name": "Book airline",
		"inputs": map[string]any{"parameters": []any{
			map[string]any{"parameter name": "flight number", "parameter description": "The overnight flight from EWR to MAD", "parameter value": "UA23"},
			map[string]any{"parameter name": "flight date", "parameter value": "8 August 2025, 12:20 EDT"},
			map[string]any{"parameter name": "flight cost", "parameter value": "$1200 USD"}}},
		"date": "July 23, 2025, 11:59 UTC"}
}

// Travel returns the fixture chain (4 records).
func Travel(start time.Time) [][]byte {
	upgrade := map[string]any{"version": 1.0, "operation": "https://airline.com/api/v1/upgrade-seat", "operation name": "Upgrade seat",
		"inputs": map[string]any{"parameters": []any{map[string]any{"parameter name": "fare difference", "parameter value": "$640 USD"}}},
		"date":   "July 23, 2025, 12:04 UTC"}
	transfer := map[string]any{"version": 1.0, "operation": "https://bank.example/api/v1/transfer-funds", "operation name": "Transfer funds",
		"inputs": map[string]any{"parameters": []any{map[string]any{"parameter name": "from account", "parameter value": "DE89 3704 0044 0532 0130 00"},
			map[string]any{"parameter name": "amount", "parameter value": "€2,400.00"}}}, "date": "July 23, 2025, 12:30 UTC"}
	return [][]byte{
		Keys(),
		Confirmation(FlightBooking(), "conf-7f3a91", "accept", "user:alice@example.com", start.Add(time.Minute), false),
		Confirmation(upgrade, "conf-7f3a92", "reject", "user:alice@example.com", start.Add(6*time.Minute), false),
		Confirmation(transfer, "conf-7f3a93", "accept", "user:alice@example.com", start.Add(31*time.Minute), true),
	}
}
