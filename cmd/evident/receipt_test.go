package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/evident-log/evident/servicekey"
	"github.com/veraison/go-cose"
)

const ietfVector = "../../testvectors/external/scitt/valid-es256"

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReceiptVerifyIETFVector: the IETF SCITT vector (another service's RFC 9942 receipt,
// ES256, no kid) verifies through the CLI, as a statement + receipt and as a transparent
// statement; any changed byte of the statement, proof or signature is refused.
func TestReceiptVerifyIETFVector(t *testing.T) {
	stmtPath := filepath.Join(ietfVector, "statement.cose")
	rcptPath := filepath.Join(ietfVector, "receipt.cose")
	keyPath := filepath.Join(ietfVector, "log-key.pub")
	code, out, errs := cli("receipt", "verify", "--statement", stmtPath, "--receipt", rcptPath, "--key", keyPath)
	if code != exitVerified || !strings.Contains(out, "VERDICT: VERIFIED") || !strings.Contains(out, "leaf 2 of tree size 8") ||
		!strings.Contains(out, "root e1dba63622c67f39bc40bbbcfd62c22a4f3355aa72dff1044d6c5dba52448e61") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	stmt, _ := os.ReadFile(stmtPath)
	rcpt, _ := os.ReadFile(rcptPath)
	ts, err := receipts.AttachReceipts(stmt, rcpt)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli("receipt", "verify", "--transparent", writeTemp(t, "ts.cose", ts), "--key", keyPath); code != exitVerified {
		t.Fatalf("transparent: exit %d\n%s%s", code, out, errs)
	}

	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	tamper := []struct {
		name       string
		stmt, rcpt []byte
	}{
		{"statement payload", flip(stmt, len(stmt)-80), rcpt},
		{"receipt signature", stmt, flip(rcpt, len(rcpt)-1)},
		{"receipt proof path", stmt, flip(rcpt, len(rcpt)-100)},
	}
	for _, tc := range tamper {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := cli("receipt", "verify", "--statement", writeTemp(t, "s", tc.stmt), "--receipt", writeTemp(t, "r", tc.rcpt), "--key", keyPath)
			if code != exitBroken || !strings.Contains(out, "BROKEN") {
				t.Fatalf("exit %d\n%s", code, out)
			}
		})
	}
	// Wrong key.
	k, _ := servicekey.Generate(servicekey.TypeP256)
	pemKey, _ := servicekey.EncodePEM(k, nil)
	if code, _, _ := cli("receipt", "verify", "--statement", stmtPath, "--receipt", rcptPath, "--key", writeTemp(t, "k.pem", pemKey)); code != exitBroken {
		t.Fatalf("wrong key: exit %d", code)
	}
	// Usage errors.
	for _, args := range [][]string{{"receipt"}, {"receipt", "verify"}, {"receipt", "verify", "--statement", stmtPath, "--key", keyPath}} {
		if code, _, _ := cli(args...); code != exitUsage {
			t.Fatalf("%v: exit %d", args, code)
		}
	}
}

// TestReceiptVerifyPolicy: our own receipt over a statement, with a COSE_KeySet picking
// the key by kid, and the registration re-checked against the policy statement.
func TestReceiptVerifyPolicy(t *testing.T) {
	svcKey, _ := servicekey.Generate(servicekey.TypeEd25519)
	other, _ := servicekey.Generate(servicekey.TypeP256)
	svc, err := receipts.NewSigner(svcKey)
	if err != nil {
		t.Fatal(err)
	}
	is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmES384)
	stmt := is.Sign(t, []byte("sbom"), regpolicytest.Options{Subject: "pkg:x", ContentType: "text/plain"})
	entry, _ := receipts.EntryHash(stmt)
	leaf := receipts.LeafHash(entry[:])
	rs, err := receipts.SignRoot(svc, receipts.Claims{Issuer: "evident:test", Subject: "log"}, leaf[:])
	if err != nil {
		t.Fatal(err)
	}
	rcpt, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: 1, LeafIndex: 0, Path: [][]byte{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := receipts.COSEKey(other.Public())
	k2, _ := receipts.COSEKey(svcKey.Public())
	keySet := append([]byte{0x82}, append(k1, k2...)...)
	keysPath := writeTemp(t, "keys.cbor", keySet)

	pol := regpolicy.Policy{Format: regpolicy.Format, Issuers: []regpolicy.Issuer{{ISS: is.ISS, Keys: []regpolicy.Key{{PEM: is.PEM(t)}}}}}
	pp, _ := pol.Marshal()
	parsed, err := regpolicy.Parse(pp)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := regpolicy.Sign(svc, "evident:test", parsed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"receipt", "verify", "--statement", writeTemp(t, "s", stmt), "--receipt", writeTemp(t, "r", rcpt), "--key", keysPath}
	code, out, errs := cli(append(args, "--policy", writeTemp(t, "p", ps))...)
	if code != exitVerified || !strings.Contains(out, "passes the registration policy") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// A policy that does not list the issuer: the re-check fails.
	pol.Issuers[0].ISS = "https://someone.else"
	pp, _ = pol.Marshal()
	parsed, _ = regpolicy.Parse(pp)
	ps2, _ := regpolicy.Sign(svc, "evident:test", parsed, time.Now())
	if code, out, _ := cli(append(args, "--policy", writeTemp(t, "p2", ps2))...); code != exitBroken || !strings.Contains(out, "unknown_issuer") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestKeysCommands(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "keys", "service.key")
	os.MkdirAll(filepath.Dir(keyPath), 0o700)
	t.Setenv("EVIDENT_SERVICE_KEY_PASSWORD", "correct horse battery staple")
	code, out, errs := cli("keys", "generate", "-type", "p256", "-o", keyPath)
	if code != 0 || !strings.Contains(out, "kid ") {
		t.Fatalf("generate: %d %s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(keyPath); !bytes.Contains(b, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) {
		t.Fatal("key not encrypted with the password")
	}
	if code, _, _ := cli("keys", "generate", "-o", keyPath); code != exitFailure {
		t.Fatalf("generate over an existing key: %d", code)
	}
	code, tp, _ := cli("keys", "thumbprint", keyPath)
	tp = strings.TrimSpace(tp)
	if code != 0 || len(tp) != 64 || !strings.Contains(out, tp) {
		t.Fatalf("thumbprint %q (generate said %q)", tp, out)
	}
	if code, show, _ := cli("keys", "show", keyPath); code != 0 || !strings.Contains(show, "BEGIN PUBLIC KEY") || !strings.Contains(show, tp) {
		t.Fatalf("show: %s", show)
	}
	code, rot, errs := cli("keys", "rotate", "-data", dir)
	if code != 0 || !strings.Contains(rot, "retired kid "+tp) {
		t.Fatalf("rotate: %d %s%s", code, rot, errs)
	}
	code, tp2, _ := cli("keys", "thumbprint", keyPath)
	if code != 0 || strings.TrimSpace(tp2) == tp {
		t.Fatalf("key unchanged after rotate")
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", servicekey.RetiredDir, tp+".key")); err != nil {
		t.Fatalf("retired key: %v", err)
	}
	code, hist, _ := cli("keys", "show", filepath.Join(dir, "keys", servicekey.HistoryFile))
	if code != 0 || !strings.Contains(hist, "2 statement/receipt key(s)") || !strings.Contains(hist, "current") {
		t.Fatalf("history: %s", hist)
	}
	if code, _, _ := cli("keys", "frobnicate"); code != exitUsage {
		t.Fatalf("unknown subcommand: %d", code)
	}
}

// TestReceiptVerifyEmptyPath: a receipt of the only leaf of a one-leaf tree carries the
// empty path RFC 9162 gives it, which RFC 9942's CDDL does not allow. It still verifies
// (evidence issued before evidentd stopped cutting such receipts), with a note saying so;
// an empty path where RFC 9162 needs hashes is refused.
func TestReceiptVerifyEmptyPath(t *testing.T) {
	key, err := servicekey.Generate(servicekey.TypeEd25519)
	if err != nil {
		t.Fatal(err)
	}
	s, err := receipts.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := receipts.SignStatement(s, []byte("x"), receipts.StatementOptions{Claims: receipts.Claims{Issuer: "i", Subject: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := receipts.EntryHash(stmt)
	leaf := receipts.LeafHash(entry[:])
	ck, _ := receipts.COSEKey(key.Public())
	keyFile, stmtFile := writeTemp(t, "key.cbor", ck), writeTemp(t, "s.cose", stmt)
	for _, tc := range []struct {
		name string
		size uint64
		code int
		want string
	}{
		{"one-leaf tree", 1, exitVerified, "note: empty proof path"},
		{"two-leaf tree", 2, exitBroken, "path has 0 hashes, RFC 9162 needs 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := receipts.SignRoot(s, receipts.Claims{Subject: "log"}, leaf[:])
			if err != nil {
				t.Fatal(err)
			}
			rc, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: 1, LeafIndex: 0}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.size != 1 {
				// The proof [1, 0, []] edited to [size, 0, []]: the builder refuses to make it.
				rc = bytes.Replace(rc, []byte{0x83, 0x01, 0x00, 0x80}, []byte{0x83, byte(tc.size), 0x00, 0x80}, 1)
			}
			code, out, errs := cli("receipt", "verify", "--statement", stmtFile, "--receipt", writeTemp(t, "r.cose", rc), "--key", keyFile)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d with %q\n%s%s", code, tc.code, tc.want, out, errs)
			}
		})
	}
}
