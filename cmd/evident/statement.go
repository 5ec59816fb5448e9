package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/servicekey"
)

// Registration policies and statements carry at most this much payload (the service's limit).
const maxStatementPayload = receipts.MaxStatementSize

// newStatementCmd is the `evident statement` group.
func newStatementCmd(a *app) *cobra.Command {
	return group(a, &cobra.Command{
		Use:     "statement <keygen|policy|sign> [flags]",
		Short:   "Make SCITT signed statements to register: keygen, policy, sign",
		Long:    "Make SCITT signed statements to register with POST /entries (docs/scitt.md).",
		Example: "  evident statement keygen -o issuer.key\n  evident statement sign --key issuer.key --iss https://acme.example --sub pkg:npm/x --content-type application/json sbom.json -o sbom.cose",
	}, newStatementKeygenCmd(a), newStatementPolicyCmd(a), newStatementSignCmd(a))
}

// newStatementKeygenCmd is `evident statement keygen -o FILE`.
func newStatementKeygenCmd(a *app) *cobra.Command {
	var format formatFlag
	var typ, out string
	cmd := &cobra.Command{
		Use:   "keygen [--type ed25519|p256] -o FILE",
		Short: "Write a new issuer private key (unencrypted PKCS#8 PEM, mode 0600, never overwritten)",
		Long: `Writes a new issuer private key: unencrypted PKCS#8 PEM ("PRIVATE KEY"), mode 0600, never
overwritten (openssl genpkey -algorithm ed25519 makes the same form).`,
		Example:           "  evident statement keygen -o issuer.key\n  evident statement keygen --type p256 -o issuer.key --format json",
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	newKeyFlags(cmd, &typ, &out, "key type: ed25519 (EdDSA) or p256 (ES256)")
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		if code, ok := format.check(cmd); !ok {
			return code
		}
		if out == "" {
			return usageErr(cmd, "missing -o")
		}
		k, err := servicekey.Generate(typ)
		if err != nil {
			return usageErr(cmd, "-type: %v", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err == nil {
			err = servicekey.WriteNew(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		}
		if err != nil {
			fmt.Fprintln(a.stderr, "evident statement keygen:", err)
			return exitFailure
		}
		kid, _ := servicekey.Thumbprint(k.Public())
		if format.json() {
			raw, _ := hex.DecodeString(kid)
			_, b64 := kidStrings(raw)
			return reportJSON(cmd, a.stdout, keyOutput{File: out, Type: typ, KID: kid, KIDBase64: b64})
		}
		fmt.Fprintf(a.stdout, "wrote %s (%s, kid %s): keep it secret; it signs your statements\n", out, typ, kid)
		return 0
	})
	return cmd
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

// policyOutput is what `evident statement policy --format json` writes.
type policyOutput struct {
	File string `json:"file,omitempty"` // where it was written (-o); absent: Policy holds it
	// Policy is the registration policy, as written to File.
	Policy json.RawMessage `json:"policy"`
}

// newStatementPolicyCmd is `evident statement policy`.
func newStatementPolicyCmd(a *app) *cobra.Command {
	var format formatFlag
	var iss, keyFile, out string
	var cts []string
	cmd := &cobra.Command{
		Use:   "policy --iss ISS --key FILE [--content-type CT]... [-o FILE]",
		Short: "Write a registration policy (evidentd --registration-policy) for an issuer and its key",
		Long:  "Writes a registration policy (evidentd --registration-policy) that admits statements of issuer ISS signed with FILE's key.",
		Example: `  evident statement policy --iss https://acme.example --key issuer.key -o policy.json
  evident statement policy --iss https://acme.example --key issuer.key --content-type application/spdx+json --format json`,
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	f := cmd.Flags()
	f.StringVar(&iss, "iss", "", "the issuer (CWT claim 1) the policy admits, exactly as statements carry it")
	f.StringVar(&keyFile, "key", "", "the issuer's key file (its public key is pinned)")
	f.StringArrayVar(&cts, "content-type", nil, "a payload content type to allow (repeat; none: any)")
	f.StringVarP(&out, "output", "o", "", "output file (default standard output)")
	markFiles(cmd, "key", "output")
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		if code, ok := format.check(cmd); !ok {
			return code
		}
		if code, ok := requireFlags(cmd, "key", "iss"); !ok {
			return code
		}
		k, err := loadIssuerKey(keyFile)
		if err != nil {
			fmt.Fprintln(a.stderr, "evident statement policy:", err)
			return exitFailure
		}
		der, err := x509.MarshalPKIXPublicKey(k.Public())
		if err != nil {
			fmt.Fprintln(a.stderr, "evident statement policy:", err)
			return exitFailure
		}
		p := regpolicy.Policy{
			Format:       regpolicy.Format,
			Issuers:      []regpolicy.Issuer{{ISS: iss, Keys: []regpolicy.Key{{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}}}},
			ContentTypes: cts,
		}
		b, err := json.MarshalIndent(p, "", "  ")
		if err == nil {
			// The file must be what evidentd will accept.
			_, err = regpolicy.Parse(b)
		}
		if err != nil {
			fmt.Fprintln(a.stderr, "evident statement policy:", err)
			return exitUsage
		}
		if !format.json() {
			return writeOut(a.stdout, a.stderr, "policy", out, append(b, '\n'))
		}
		if out != "" {
			if code := writeOut(a.stdout, a.stderr, "policy", out, append(b, '\n')); code != 0 {
				return code
			}
		}
		return reportJSON(cmd, a.stdout, policyOutput{File: out, Policy: b})
	})
	return cmd
}

// signOutput is what `evident statement sign --format json` writes.
type signOutput struct {
	File        string `json:"file,omitempty"` // where it was written (-o); absent: Statement holds it
	Bytes       int    `json:"bytes"`
	Issuer      string `json:"iss"`
	Subject     string `json:"sub"`
	ContentType string `json:"content_type"`
	KID         string `json:"kid"` // hex RFC 9679 thumbprint of the issuer key
	// Statement is the COSE_Sign1 signed statement, base64, when no -o was given.
	Statement []byte `json:"statement,omitempty"`
}

// newStatementSignCmd is `evident statement sign`.
func newStatementSignCmd(a *app) *cobra.Command {
	var format formatFlag
	var keyFile, iss, sub, ct, out string
	cmd := &cobra.Command{
		Use:   "sign --key FILE --iss ISS --sub SUB --content-type CT [-o FILE] [PAYLOAD | -]",
		Short: "Sign a payload as a COSE_Sign1 SCITT signed statement",
		Long: `Signs PAYLOAD (a file, or standard input for - or none) as a COSE_Sign1 signed statement:
protected alg, content type (3), kid (4: the RFC 9679 thumbprint of the key) and CWT claims
(15: iss, sub, iat = now); written to -o (default standard output).`,
		Example: `  evident statement sign --key issuer.key --iss https://acme.example --sub pkg:npm/x --content-type application/spdx+json sbom.json -o sbom.cose
  evident statement sign --key issuer.key --iss I --sub S --content-type text/plain --format json - < note.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{msg: fmt.Sprintf("one payload file at most, got %q", args)}
			}
			return nil
		},
		ValidArgsFunction: fileArgs,
	}
	f := cmd.Flags()
	f.StringVar(&keyFile, "key", "", "issuer private key file (PKCS#8 PEM, Ed25519 or P-256; see keygen)")
	f.StringVar(&iss, "iss", "", "issuer, CWT claim 1 (as the registration policy names it)")
	f.StringVar(&sub, "sub", "", "subject, CWT claim 2: what the statement is about (for example a package URL)")
	f.StringVar(&ct, "content-type", "", "media type of the payload, header 3 (for example application/spdx+json)")
	f.StringVarP(&out, "output", "o", "", "output file (default standard output)")
	markFiles(cmd, "key", "output")
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		if code, ok := format.check(cmd); !ok {
			return code
		}
		payload := ""
		if len(args) == 1 {
			payload = args[0]
		}
		return statementSign(cmd, payload, keyFile, iss, sub, ct, out, format.json(), os.Stdin, a.stdout, a.stderr)
	})
	return cmd
}

// statementSign signs the payload file (standard input for "" or "-") and writes the statement.
func statementSign(cmd *cobra.Command, payloadFile, keyFile, iss, sub, ct, out string, asJSON bool, stdin io.Reader, stdout, stderr io.Writer) int {
	if code, ok := requireFlags(cmd, "key", "iss", "sub", "content-type"); !ok {
		return code
	}
	k, err := loadIssuerKey(keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "evident statement sign:", err)
		return exitFailure
	}
	in, name := stdin, "standard input"
	if p := payloadFile; p != "" && p != "-" {
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
		Claims:      receipts.Claims{Issuer: iss, Subject: sub, IssuedAt: time.Now().Unix()},
		ContentType: ct,
	})
	if err != nil {
		fmt.Fprintln(stderr, "evident statement sign:", err)
		return exitUsage
	}
	if len(st) > receipts.MaxStatementSize {
		fmt.Fprintf(stderr, "evident statement sign: the statement is %d bytes, over the %d a service takes: register a hash envelope of the payload instead\n", len(st), receipts.MaxStatementSize)
		return exitUsage
	}
	if !asJSON {
		return writeOut(stdout, stderr, "sign", out, st)
	}
	res := signOutput{File: out, Bytes: len(st), Issuer: iss, Subject: sub, ContentType: ct}
	res.KID, _ = servicekey.Thumbprint(k.Public())
	if out != "" {
		if code := writeOut(stdout, stderr, "sign", out, st); code != 0 {
			return code
		}
	} else {
		res.Statement = st
	}
	return reportJSON(cmd, stdout, res)
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
