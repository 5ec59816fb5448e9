package policy_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/receipts/policy"
	"github.com/evident-log/evident/receipts/policy/policytest"
	"github.com/veraison/go-cose"
)

func mustParse(t *testing.T, p policy.Policy) *policy.Policy {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := policy.Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, b)
	}
	return out
}

func TestCheck(t *testing.T) {
	ed := policytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA)
	es256 := policytest.NewIssuer(t, "https://es256.example", cose.AlgorithmES256)
	es384 := policytest.NewIssuer(t, "https://es384.example", cose.AlgorithmES384)
	ps256 := policytest.NewIssuer(t, "https://ps256.example", cose.AlgorithmPS256)
	stranger := policytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA) // same iss, unpinned key
	outsider := policytest.NewIssuer(t, "https://nobody.example", cose.AlgorithmES256)
	legacy := policytest.NewIssuer(t, "https://legacy.example", cose.AlgorithmES256)

	p := mustParse(t, policy.Policy{
		Format: policy.Format,
		Issuers: []policy.Issuer{
			{ISS: ed.ISS, Keys: []policy.Key{{PEM: ed.PEM(t)}}},
			{ISS: es256.ISS, Keys: []policy.Key{{PEM: es256.PEM(t)}}},
			{ISS: es384.ISS, Keys: []policy.Key{{PEM: es384.PEM(t)}}},
			{ISS: ps256.ISS, Keys: []policy.Key{{PEM: ps256.PEM(t)}}},
			{ISS: outsider.ISS + "/other", Keys: []policy.Key{{PEM: outsider.PEM(t)}}},
			{ISS: legacy.ISS, Keys: []policy.Key{{PEM: legacy.PEM(t), KID: hex.EncodeToString([]byte("legacy-1"))}}},
		},
		ContentTypes:   []string{"application/spdx+json", "text/plain"},
		RequiredClaims: []string{"iat"},
		MaxSize:        8 << 10,
	})
	only := mustParse(t, policy.Policy{Format: policy.Format, Algorithms: []string{"ES256"},
		Issuers: []policy.Issuer{{ISS: ed.ISS, Keys: []policy.Key{{PEM: ed.PEM(t)}}}}})

	ok := policytest.Options{Subject: "pkg:golang/example@v1", ContentType: "application/spdx+json", IssuedAt: 1767225600}
	with := func(f func(*policytest.Options)) policytest.Options { o := ok; f(&o); return o }
	sbom := []byte(`{"spdxVersion":"SPDX-2.3"}`)

	tests := []struct {
		name     string
		pol      *policy.Policy
		stmt     []byte
		wantCode string
	}{
		{"EdDSA by kid", p, ed.Sign(t, sbom, ok), ""},
		{"ES256 by kid", p, es256.Sign(t, sbom, ok), ""},
		{"ES384 by kid", p, es384.Sign(t, sbom, ok), ""},
		{"PS256 by kid", p, ps256.Sign(t, sbom, ok), ""},
		{"ES256 by x5chain", p, es256.Sign(t, sbom, with(func(o *policytest.Options) { o.X5Chain = true })), ""},
		{"explicit kid", p, legacy.Sign(t, sbom, with(func(o *policytest.Options) { o.KID = []byte("legacy-1") })), ""},
		{"content type with parameters", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.ContentType = "text/plain; charset=utf-8" })), ""},
		{"unknown issuer", p, outsider.Sign(t, sbom, ok), policy.CodeUnknownIssuer},
		{"unpinned key of a known issuer", p, stranger.Sign(t, sbom, ok), policy.CodeUnknownKey},
		{"x5chain of an unpinned key", p, stranger.Sign(t, sbom, with(func(o *policytest.Options) { o.X5Chain = true })), policy.CodeUnknownKey},
		{"no kid no x5chain", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.NoKID = true })), policy.CodeUnknownKey},
		{"kid of another issuer", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.KID = es256.KID(t) })), policy.CodeUnknownKey},
		{"content type not allowed", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.ContentType = "application/x-evil" })), policy.CodeContentType},
		{"no content type", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.ContentType = "" })), policy.CodeContentType},
		{"missing iat", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.IssuedAt = 0 })), policy.CodeMissingClaim},
		{"missing sub", p, ed.Sign(t, sbom, with(func(o *policytest.Options) { o.Subject = "" })), policy.CodeMissingClaim},
		{"too large", p, ed.Sign(t, make([]byte, 9<<10), ok), policy.CodeTooLarge},
		{"algorithm not allowed", only, ed.Sign(t, sbom, ok), policy.CodeAlgNotAllowed},
		{"garbage", p, []byte{0xd2, 0x84, 0x01}, policy.CodeMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.pol.Check(tc.stmt)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if d.Issuer == "" || len(d.KeyID) != 32 {
					t.Fatalf("decision %+v", d)
				}
				return
			}
			var r *policy.Refusal
			if !errors.As(err, &r) || !errors.Is(err, policy.ErrRefused) {
				t.Fatalf("err = %v, want a refusal %s", err, tc.wantCode)
			}
			if r.Code != tc.wantCode || r.Detail == "" {
				t.Fatalf("refusal %s (%s), want %s", r.Code, r.Detail, tc.wantCode)
			}
		})
	}

	t.Run("bad signature", func(t *testing.T) {
		raw := ed.Sign(t, sbom, ok)
		raw[len(raw)-1] ^= 1
		_, err := p.Check(raw)
		var r *policy.Refusal
		if !errors.As(err, &r) || r.Code != policy.CodeBadSignature {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("hash envelope preimage type", func(t *testing.T) {
		s, err := receipts.NewSigner(ed.Key)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := receipts.SignHashEnvelope(s, []byte("private sbom"), 0, "application/spdx+json", "https://x.example/sbom", receipts.StatementOptions{
			Claims: receipts.Claims{Issuer: ed.ISS, Subject: "pkg:x", IssuedAt: 1767225600}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Check(raw); err != nil {
			t.Fatalf("hash envelope refused: %v", err)
		}
		raw, _ = receipts.SignHashEnvelope(s, []byte("x"), 0, "application/zip", "", receipts.StatementOptions{
			Claims: receipts.Claims{Issuer: ed.ISS, Subject: "pkg:x", IssuedAt: 1767225600}})
		var r *policy.Refusal
		if _, err := p.Check(raw); !errors.As(err, &r) || r.Code != policy.CodeContentType {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestParseRejects(t *testing.T) {
	ed := policytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA)
	key := strings.ReplaceAll(ed.PEM(t), "\n", `\n`)
	tests := []struct{ name, doc, want string }{
		{"wrong format", `{"format":"x","issuers":[]}`, "format"},
		{"no issuer", `{"format":"evident-registration-policy/v1","issuers":[]}`, "no issuer"},
		{"unknown field", `{"format":"evident-registration-policy/v1","issuers":[],"allow_all":true}`, "unknown field"},
		{"no key", `{"format":"evident-registration-policy/v1","issuers":[{"iss":"a","keys":[]}]}`, "no key"},
		{"bad pem", `{"format":"evident-registration-policy/v1","issuers":[{"iss":"a","keys":[{"pem":"x"}]}]}`, "PUBLIC KEY"},
		{"duplicate issuer", `{"format":"evident-registration-policy/v1","issuers":[{"iss":"a","keys":[{"pem":"` + key + `"}]},{"iss":"a","keys":[{"pem":"` + key + `"}]}]}`, "twice"},
		{"unknown alg", `{"format":"evident-registration-policy/v1","algorithms":["RS256"],"issuers":[{"iss":"a","keys":[{"pem":"` + key + `"}]}]}`, "RS256"},
		{"unknown claim", `{"format":"evident-registration-policy/v1","required_claims":["foo"],"issuers":[{"iss":"a","keys":[{"pem":"` + key + `"}]}]}`, "foo"},
		{"bad kid", `{"format":"evident-registration-policy/v1","issuers":[{"iss":"a","keys":[{"pem":"` + key + `","kid":"zz"}]}]}`, "not hex"},
		{"negative size", `{"format":"evident-registration-policy/v1","max_size":-1,"issuers":[{"iss":"a","keys":[{"pem":"` + key + `"}]}]}`, "max_size"},
		{"trailing", `{"format":"evident-registration-policy/v1","issuers":[{"iss":"a","keys":[{"pem":"` + key + `"}]}]} {}`, "trailing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse([]byte(tc.doc))
			if !errors.Is(err, policy.ErrInvalidPolicy) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidPolicy mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPolicyStatementRoundTrip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := receipts.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := policy.Sign(s, "evident:test", p, time.Unix(1767225600, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := policy.FromStatement(stmt, s.Public())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Issuers) != len(p.Issuers) || got.Issuers[0].ISS != p.Issuers[0].ISS {
		t.Fatalf("round trip: %+v", got)
	}
	id, err := policy.ID(stmt)
	if err != nil || len(id) != 64 {
		t.Fatalf("ID = %q, %v", id, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := policy.FromStatement(stmt, other.Public()); !errors.Is(err, policy.ErrInvalidPolicy) {
		t.Fatalf("wrong service key: err = %v", err)
	}
}
