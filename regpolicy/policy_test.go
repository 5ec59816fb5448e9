package regpolicy_test

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
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/veraison/go-cose"
)

func mustParse(t *testing.T, p regpolicy.Policy) *regpolicy.Policy {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := regpolicy.Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, b)
	}
	return out
}

func TestCheck(t *testing.T) {
	ed := regpolicytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA)
	es256 := regpolicytest.NewIssuer(t, "https://es256.example", cose.AlgorithmES256)
	es384 := regpolicytest.NewIssuer(t, "https://es384.example", cose.AlgorithmES384)
	ps256 := regpolicytest.NewIssuer(t, "https://ps256.example", cose.AlgorithmPS256)
	stranger := regpolicytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA) // same iss, unpinned key
	outsider := regpolicytest.NewIssuer(t, "https://nobody.example", cose.AlgorithmES256)
	legacy := regpolicytest.NewIssuer(t, "https://legacy.example", cose.AlgorithmES256)

	p := mustParse(t, regpolicy.Policy{
		Format: regpolicy.Format,
		Issuers: []regpolicy.Issuer{
			{ISS: ed.ISS, Keys: []regpolicy.Key{{PEM: ed.PEM(t)}}},
			{ISS: es256.ISS, Keys: []regpolicy.Key{{PEM: es256.PEM(t)}}},
			{ISS: es384.ISS, Keys: []regpolicy.Key{{PEM: es384.PEM(t)}}},
			{ISS: ps256.ISS, Keys: []regpolicy.Key{{PEM: ps256.PEM(t)}}},
			{ISS: outsider.ISS + "/other", Keys: []regpolicy.Key{{PEM: outsider.PEM(t)}}},
			{ISS: legacy.ISS, Keys: []regpolicy.Key{{PEM: legacy.PEM(t), KID: hex.EncodeToString([]byte("legacy-1"))}}},
		},
		ContentTypes:   []string{"application/spdx+json", "text/plain"},
		RequiredClaims: []string{"iat"},
		MaxSize:        8 << 10,
	})
	only := mustParse(t, regpolicy.Policy{Format: regpolicy.Format, Algorithms: []string{"ES256"},
		Issuers: []regpolicy.Issuer{{ISS: ed.ISS, Keys: []regpolicy.Key{{PEM: ed.PEM(t)}}}}})

	ok := regpolicytest.Options{Subject: "pkg:golang/example@v1", ContentType: "application/spdx+json", IssuedAt: 1767225600}
	with := func(f func(*regpolicytest.Options)) regpolicytest.Options { o := ok; f(&o); return o }
	sbom := []byte(`{"spdxVersion":"SPDX-2.3"}`)

	tests := []struct {
		name     string
		pol      *regpolicy.Policy
		stmt     []byte
		wantCode string
	}{
		{"EdDSA by kid", p, ed.Sign(t, sbom, ok), ""},
		{"ES256 by kid", p, es256.Sign(t, sbom, ok), ""},
		{"ES384 by kid", p, es384.Sign(t, sbom, ok), ""},
		{"PS256 by kid", p, ps256.Sign(t, sbom, ok), ""},
		{"ES256 by x5chain", p, es256.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.X5Chain = true })), ""},
		{"explicit kid", p, legacy.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.KID = []byte("legacy-1") })), ""},
		{"content type with parameters", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.ContentType = "text/plain; charset=utf-8" })), ""},
		{"unknown issuer", p, outsider.Sign(t, sbom, ok), regpolicy.CodeUnknownIssuer},
		{"unpinned key of a known issuer", p, stranger.Sign(t, sbom, ok), regpolicy.CodeUnknownKey},
		{"x5chain of an unpinned key", p, stranger.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.X5Chain = true })), regpolicy.CodeUnknownKey},
		{"no kid no x5chain", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.NoKID = true })), regpolicy.CodeUnknownKey},
		{"kid of another issuer", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.KID = es256.KID(t) })), regpolicy.CodeUnknownKey},
		{"content type not allowed", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.ContentType = "application/x-evil" })), regpolicy.CodeContentType},
		{"no content type", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.ContentType = "" })), regpolicy.CodeContentType},
		{"missing iat", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.IssuedAt = 0 })), regpolicy.CodeMissingClaim},
		{"missing sub", p, ed.Sign(t, sbom, with(func(o *regpolicytest.Options) { o.Subject = "" })), regpolicy.CodeMissingClaim},
		{"too large", p, ed.Sign(t, make([]byte, 9<<10), ok), regpolicy.CodeTooLarge},
		{"algorithm not allowed", only, ed.Sign(t, sbom, ok), regpolicy.CodeAlgNotAllowed},
		{"garbage", p, []byte{0xd2, 0x84, 0x01}, regpolicy.CodeMalformed},
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
			var r *regpolicy.Refusal
			if !errors.As(err, &r) || !errors.Is(err, regpolicy.ErrRefused) {
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
		var r *regpolicy.Refusal
		if !errors.As(err, &r) || r.Code != regpolicy.CodeBadSignature {
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
		var r *regpolicy.Refusal
		if _, err := p.Check(raw); !errors.As(err, &r) || r.Code != regpolicy.CodeContentType {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestParseRejects(t *testing.T) {
	ed := regpolicytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA)
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
			_, err := regpolicy.Parse([]byte(tc.doc))
			if !errors.Is(err, regpolicy.ErrInvalidPolicy) || !strings.Contains(err.Error(), tc.want) {
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
	p, err := regpolicy.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := receipts.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := regpolicy.Sign(s, "evident:test", p, time.Unix(1767225600, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := regpolicy.FromStatement(stmt, s.Public())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Issuers) != len(p.Issuers) || got.Issuers[0].ISS != p.Issuers[0].ISS {
		t.Fatalf("round trip: %+v", got)
	}
	id, err := regpolicy.ID(stmt)
	if err != nil || len(id) != 64 {
		t.Fatalf("ID = %q, %v", id, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := regpolicy.FromStatement(stmt, other.Public()); !errors.Is(err, regpolicy.ErrInvalidPolicy) {
		t.Fatalf("wrong service key: err = %v", err)
	}
}
