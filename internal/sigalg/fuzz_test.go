package sigalg

import (
	"testing"

	"github.com/evident-log/evident/ledger/canonical"
)

// FuzzParse: digests, signatures and JWKs parse without panicking, and a parsed digest prints back.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`))
	f.Add([]byte(`{"alg":"ed25519","kid":"k","value":"AAAA"}`))
	f.Add([]byte(`"sha3-256:9f3b1c1e8a0d4c57b2e6f1a3d5c7e9b0a2c4e6f8091a3b5c7d9e1f203a4b5c6d"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonical.Parse(data, canonical.Options{})
		if err != nil {
			return
		}
		switch x := v.(type) {
		case string:
			if d, err := ParseDigest(x); err == nil && d.String() != x {
				t.Fatalf("digest %q prints as %q", x, d.String())
			}
		case *canonical.Object:
			ParseJWK(x)
			ParseSignature(x, "kid")
		}
	})
}
