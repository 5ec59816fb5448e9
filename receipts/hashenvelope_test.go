package receipts

import (
	"crypto/sha256"
	"errors"
	"testing"
)

func TestHashEnvelope(t *testing.T) {
	s := newP256Signer(t)
	content := []byte(`{"sbom":"large and private"}`)
	tests := []struct {
		name     string
		alg      int64
		ptype    string
		loc      string
		ct       string
		wantErr  error
		wantHash int
	}{
		{name: "sha256 default", alg: 0, ptype: "application/spdx+json", loc: "https://sbom.example/1", wantHash: 32},
		{name: "sha384", alg: HashAlgSHA384, wantHash: 48},
		{name: "sha512", alg: HashAlgSHA512, ptype: "text/plain", wantHash: 64},
		{name: "unknown hash alg", alg: -99, wantErr: ErrUnsupportedAlg},
		{name: "content type forbidden", ct: "application/json", wantErr: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := SignHashEnvelope(s, content, tc.alg, tc.ptype, tc.loc, StatementOptions{Claims: testClaims, ContentType: tc.ct})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := ParseStatement(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Verify(s.Public()); err != nil {
				t.Fatal(err)
			}
			he, ok, err := st.HashEnvelope()
			if err != nil || !ok {
				t.Fatalf("HashEnvelope: ok=%v err=%v", ok, err)
			}
			if len(he.Hash) != tc.wantHash || he.PreimageContentType != tc.ptype || he.Location != tc.loc {
				t.Fatalf("envelope %+v", he)
			}
			if err := st.VerifyPreimage(content); err != nil {
				t.Fatalf("VerifyPreimage: %v", err)
			}
			if err := st.VerifyPreimage(append([]byte("x"), content...)); !errors.Is(err, ErrBadProof) {
				t.Fatalf("altered content: err = %v, want ErrBadProof", err)
			}
		})
	}
}

func TestHashEnvelopeNotEnvelope(t *testing.T) {
	s := newEd25519Signer(t)
	raw, err := SignStatement(s, []byte("x"), StatementOptions{Claims: testClaims, ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStatement(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.HashEnvelope(); ok || err != nil {
		t.Fatalf("ordinary statement: ok=%v err=%v", ok, err)
	}
	if err := st.VerifyPreimage([]byte("x")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
	// A payload that does not have the hash's length is refused.
	bad, err := SignStatement(s, []byte("short"), StatementOptions{Claims: testClaims, Protected: map[int64]any{HeaderPayloadHashAlg: HashAlgSHA256}})
	if err != nil {
		t.Fatal(err)
	}
	st, err = ParseStatement(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.HashEnvelope(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short payload: err = %v", err)
	}
	h := sha256.Sum256([]byte("y"))
	withCT, err := SignStatement(s, h[:], StatementOptions{Claims: testClaims, ContentType: "text/plain", Protected: map[int64]any{HeaderPayloadHashAlg: HashAlgSHA256}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ = ParseStatement(withCT)
	if _, _, err := st.HashEnvelope(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("content type with 258: err = %v", err)
	}
}
