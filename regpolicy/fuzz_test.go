package regpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/veraison/go-cose"
)

// FuzzParse: any input either parses into a policy that re-marshals and re-parses, or is
// refused; it never panics.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "policy.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"format":"evident-registration-policy/v1","issuers":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := regpolicy.Parse(data)
		if err != nil {
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := regpolicy.Parse(out); err != nil {
			t.Fatalf("re-parse of a marshalled policy: %v", err)
		}
	})
}

// FuzzCheck: Check never panics on arbitrary statements and accepts nothing that does not
// carry a valid signature by the pinned key.
func FuzzCheck(f *testing.F) {
	is := regpolicytest.NewIssuer(f, "https://fuzz.example", cose.AlgorithmEdDSA)
	p, err := regpolicy.Parse([]byte(`{"format":"evident-registration-policy/v1","issuers":[{"iss":"https://fuzz.example","keys":[{"pem":` + jsonString(is.PEM(f)) + `}]}]}`))
	if err != nil {
		f.Fatal(err)
	}
	good := is.Sign(f, []byte("hello"), regpolicytest.Options{Subject: "s", ContentType: "text/plain"})
	f.Add(good)
	f.Add(is.Sign(f, []byte("x"), regpolicytest.Options{Subject: "s", X5Chain: true}))
	f.Add([]byte{0xd2, 0x84, 0x40, 0xa0, 0xf6, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := p.Check(data)
		if err == nil && d.Issuer != "https://fuzz.example" {
			t.Fatalf("accepted a statement from %q", d.Issuer)
		}
	})
}

func jsonString(s string) string {
	out := []byte{'"'}
	for _, c := range []byte(s) {
		switch c {
		case '\n':
			out = append(out, '\\', 'n')
		case '"', '\\':
			out = append(out, '\\', c)
		default:
			out = append(out, c)
		}
	}
	return string(append(out, '"'))
}
