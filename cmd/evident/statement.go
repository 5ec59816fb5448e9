package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/evident-log/evident/internal/evidentd/servicekey"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
)

const statementUsage = `Usage: evident statement <keygen|policy|sign> [flags]

Make SCITT signed statements to register with POST /entries (docs/scitt.md).

  keygen [-type ed25519|p256] -o FILE
        write a new issuer private key: unencrypted PKCS#8 PEM ("PRIVATE KEY"),
        mode 0600, never overwritten (openssl genpkey -algorithm ed25519 makes
        the same form)
  policy -iss ISS -key FILE [-content-type CT]... [-o FILE]
        write a registration policy (evidentd --registration-policy) that
        admits statements of issuer ISS signed with FILE's key
  sign -key FILE -iss ISS -sub SUB -content-type CT [-o FILE] [PAYLOAD | -]
        sign PAYLOAD (a file, or standard input for - or none) as a COSE_Sign1
        signed statement: protected alg, content type (3), kid (4: the RFC 9679
        thumbprint of the key) and CWT claims (15: iss, sub, iat = now);
        written to -o (default standard output)
`

// Registration policies and statements carry at most this much payload (the service's limit).
const maxStatementPayload = receipts.MaxStatementSize

func cmdStatement(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand(stdout, stderr, "evident statement", statementUsage, args, "keygen", "policy", "sign"); !ok {
		return code
	}
	switch args[0] {
	case "keygen":
		return statementKeygen(args[1:], stdout, stderr)
	case "policy":
		return statementPolicy(args[1:], stdout, stderr)
	default:
		return statementSign(args[1:], os.Stdin, stdout, stderr)
	}
}

func statementFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("evident statement "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, statementUsage); fs.PrintDefaults() }
	return fs
}

func statementKeygen(args []string, stdout, stderr io.Writer) int {
	fs := statementFlags("keygen", stderr)
	typ := fs.String("type", servicekey.TypeEd25519, "key type: ed25519 (EdDSA) or p256 (ES256)")
	out := fs.String("o", "", "output file (created, mode 0600; never overwritten)")
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if code, ok := checkArgs(fs); !ok {
		return code
	}
	if code, ok := requireFlags(fs, "o"); !ok {
		return code
	}
	k, err := servicekey.Generate(*typ)
	if err != nil {
		return usageErr(fs, "-type: %v", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err == nil {
		err = servicekey.WriteNew(*out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident statement keygen:", err)
		return exitFailure
	}
	kid, _ := servicekey.Thumbprint(k.Public())
	fmt.Fprintf(stdout, "wrote %s (%s, kid %s): keep it secret; it signs your statements\n", *out, *typ, kid)
	return 0
}

// errIssuerKey reports an issuer key file that is not an unencrypted PKCS#8 PEM Ed25519
// or ECDSA P-256 private key.
var errIssuerKey = errors.New("issuer key: want an unencrypted PKCS#8 PEM (\"PRIVATE KEY\") Ed25519 or ECDSA P-256 private key")

// loadIssuerKey reads an issuer private key: unencrypted PKCS#8 PEM, Ed25519 or P-256.
func loadIssuerKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("issuer key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: %w", path, errIssuerKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, errIssuerKey, err)
	}
	switch k := k.(type) {
	case ed25519.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if k.Curve == elliptic.P256() {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%s: %T: %w", path, k, errIssuerKey)
}

func statementPolicy(args []string, stdout, stderr io.Writer) int {
	fs := statementFlags("policy", stderr)
	iss := fs.String("iss", "", "the issuer (CWT claim 1) the policy admits, exactly as statements carry it")
	keyFile := fs.String("key", "", "the issuer's key file (its public key is pinned)")
	var cts stringList
	fs.Var(&cts, "content-type", "a payload content type to allow (repeat; none: any)")
	out := fs.String("o", "", "output file (default standard output)")
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if code, ok := checkArgs(fs); !ok {
		return code
	}
	if code, ok := requireFlags(fs, "key", "iss"); !ok {
		return code
	}
	k, err := loadIssuerKey(*keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "evident statement policy:", err)
		return exitFailure
	}
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		fmt.Fprintln(stderr, "evident statement policy:", err)
		return exitFailure
	}
	p := regpolicy.Policy{
		Format:       regpolicy.Format,
		Issuers:      []regpolicy.Issuer{{ISS: *iss, Keys: []regpolicy.Key{{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}}}},
		ContentTypes: cts,
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err == nil {
		// The file must be what evidentd will accept.
		_, err = regpolicy.Parse(b)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident statement policy:", err)
		return exitUsage
	}
	return writeOut(stdout, stderr, "policy", *out, append(b, '\n'))
}

func statementSign(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := statementFlags("sign", stderr)
	keyFile := fs.String("key", "", "issuer private key file (PKCS#8 PEM, Ed25519 or P-256; see keygen)")
	iss := fs.String("iss", "", "issuer, CWT claim 1 (as the registration policy names it)")
	sub := fs.String("sub", "", "subject, CWT claim 2: what the statement is about (for example a package URL)")
	ct := fs.String("content-type", "", "media type of the payload, header 3 (for example application/spdx+json)")
	out := fs.String("o", "", "output file (default standard output)")
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if fs.NArg() > 1 {
		return usageErr(fs, "one payload file at most, got %q", fs.Args())
	}
	if code, ok := requireFlags(fs, "key", "iss", "sub", "content-type"); !ok {
		return code
	}
	k, err := loadIssuerKey(*keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "evident statement sign:", err)
		return exitFailure
	}
	in, name := stdin, "standard input"
	if p := fs.Arg(0); p != "" && p != "-" {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintln(stderr, "evident statement sign: payload:", err)
			return exitFailure
		}
		defer f.Close()
		in, name = f, p
	}
	payload, err := io.ReadAll(io.LimitReader(in, maxStatementPayload+1))
	if err != nil {
		fmt.Fprintf(stderr, "evident statement sign: reading %s: %v\n", name, err)
		return exitFailure
	}
	if len(payload) > maxStatementPayload {
		fmt.Fprintf(stderr, "evident statement sign: %s is over %d bytes, the largest statement a service takes: register a hash envelope of it instead\n", name, maxStatementPayload)
		return exitUsage
	}
	s, err := receipts.NewSigner(k)
	if err != nil {
		fmt.Fprintln(stderr, "evident statement sign:", err)
		return exitFailure
	}
	st, err := receipts.SignStatement(s, payload, receipts.StatementOptions{
		Claims:      receipts.Claims{Issuer: *iss, Subject: *sub, IssuedAt: time.Now().Unix()},
		ContentType: *ct,
	})
	if err != nil {
		fmt.Fprintln(stderr, "evident statement sign:", err)
		return exitUsage
	}
	if len(st) > receipts.MaxStatementSize {
		fmt.Fprintf(stderr, "evident statement sign: the statement is %d bytes, over the %d a service takes: register a hash envelope of the payload instead\n", len(st), receipts.MaxStatementSize)
		return exitUsage
	}
	return writeOut(stdout, stderr, "sign", *out, st)
}

// writeOut writes b to path (created or replaced), or to stdout when path is empty.
func writeOut(stdout, stderr io.Writer, cmd, path string, b []byte) int {
	if path == "" {
		if _, err := stdout.Write(b); err != nil {
			fmt.Fprintf(stderr, "evident statement %s: %v\n", cmd, err)
			return exitFailure
		}
		return 0
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintf(stderr, "evident statement %s: %v\n", cmd, err)
		return exitFailure
	}
	return 0
}
