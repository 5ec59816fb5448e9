package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/veraison/go-cose"
)

// TestStatementSign: keygen, policy and sign make a statement the registration policy
// admits (regpolicy.Check, the service's own decision), for both key types.
func TestStatementSign(t *testing.T) {
	for _, tc := range []struct {
		typ string
		alg cose.Algorithm
	}{{"ed25519", cose.AlgorithmEdDSA}, {"p256", cose.AlgorithmES256}} {
		t.Run(tc.typ, func(t *testing.T) {
			dir := t.TempDir()
			key, pol, st, payload := filepath.Join(dir, "issuer.key"), filepath.Join(dir, "policy.json"), filepath.Join(dir, "s.cose"), filepath.Join(dir, "bom.json")
			if code, _, errs := cli("statement", "keygen", "-type", tc.typ, "-o", key); code != 0 {
				t.Fatalf("keygen: %d %s", code, errs)
			}
			if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("key file: %v %v", fi, err)
			}
			if code, _, errs := cli("statement", "keygen", "-o", key); code != exitFailure || !strings.Contains(errs, "exists") {
				t.Fatalf("keygen over an existing key: %d %s", code, errs)
			}
			if code, _, errs := cli("statement", "policy", "-iss", "https://b.example", "-key", key, "-content-type", "application/spdx+json", "-o", pol); code != 0 {
				t.Fatalf("policy: %d %s", code, errs)
			}
			os.WriteFile(payload, []byte(`{"spdxVersion":"SPDX-2.3"}`), 0o644)
			if code, _, errs := cli("statement", "sign", "-key", key, "-iss", "https://b.example", "-sub", "pkg:x@1", "-content-type", "application/spdx+json", "-o", st, payload); code != 0 {
				t.Fatalf("sign: %d %s", code, errs)
			}
			p, err := regpolicy.Parse(mustRead(t, pol))
			if err != nil {
				t.Fatal(err)
			}
			s, err := receipts.ParseStatement(mustRead(t, st))
			if err != nil || s.Alg != tc.alg || s.Claims.Issuer != "https://b.example" || s.Claims.Subject != "pkg:x@1" || s.Claims.IssuedAt == 0 || s.ContentType != "application/spdx+json" || string(s.Payload) != `{"spdxVersion":"SPDX-2.3"}` {
				t.Fatalf("statement %+v, %v", s, err)
			}
			if _, err := p.Check(mustRead(t, st)); err != nil {
				t.Fatalf("the policy refuses the statement: %v", err)
			}
			// Another issuer name is not admitted by that policy.
			other := filepath.Join(dir, "other.cose")
			if code, _, _ := cli("statement", "sign", "-key", key, "-iss", "https://evil.example", "-sub", "x", "-content-type", "application/spdx+json", "-o", other, payload); code != 0 {
				t.Fatal("sign other")
			}
			if _, err := p.Check(mustRead(t, other)); err == nil {
				t.Fatal("policy admits another issuer")
			}
		})
	}
}

// TestStatementRefusals: usage errors name what is missing; a bad key or payload is a
// clear error and writes nothing.
func TestStatementRefusals(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "issuer.key")
	if code, _, errs := cli("statement", "keygen", "-o", key); code != 0 {
		t.Fatal(errs)
	}
	pub := filepath.Join("testdata", "issuer-public.pem")
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, receipts.MaxStatementSize+1), 0o644)
	out := filepath.Join(dir, "out.cose")
	sign := func(extra ...string) []string {
		return append([]string{"statement", "sign", "-iss", "i", "-sub", "s", "-content-type", "text/plain", "-o", out}, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no subcommand", []string{"statement"}, exitUsage, "keygen|policy|sign"},
		{"unknown subcommand", []string{"statement", "make"}, exitUsage, `unknown subcommand "make"`},
		{"sign without flags", []string{"statement", "sign"}, exitUsage, "missing -key, -iss, -sub, -content-type"},
		{"policy without key", []string{"statement", "policy", "-iss", "x"}, exitUsage, "missing -key"},
		{"keygen without -o", []string{"statement", "keygen"}, exitUsage, "missing -o"},
		{"keygen bad type", []string{"statement", "keygen", "-type", "rsa", "-o", filepath.Join(dir, "k")}, exitUsage, "rsa"},
		{"two payloads", sign("-key", key, "a", "b"), exitUsage, "one payload file at most"},
		{"public key as key", sign("-key", pub, "-"), exitFailure, "PKCS#8"},
		{"missing key file", sign("-key", filepath.Join(dir, "nope"), "-"), exitFailure, "no such file"},
		{"missing payload", sign("-key", key, filepath.Join(dir, "nope")), exitFailure, "no such file"},
		{"payload too large", sign("-key", key, big), exitUsage, "hash envelope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errs, tc.code, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("a refused command wrote %s", out)
			}
		})
	}
}
