// Command mkinput2 writes the inputs generate.sh gives the entries with the features cop and
// scitt (../input/): a COP 1.0 Topic and a SCITT issuers' registration policies and signed
// statements. It ran once; the files it wrote are committed and are the input of every such
// bundle, old and new. Do not run it again for an existing bundle: its output depends on
// today's packages (and ECDSA signatures are randomized), and the corpus must keep its
// recorded bytes. It refuses to overwrite a file.
//
// COP (profile cop/1.0, chain urn:cop:topic:history-1, whose directory in a bundle is
// %XX-escaped): the claims-handling Topic of internal/scenario/copscenario, seven events
// with copHash and the emitting node's Ed25519 signature, COP JSON and structured-mode
// CloudEvents mixed, a cop.key.declared event first and a causal DAG through
// parentEventIds; cop1.jsonl holds the first four (sealed after them), cop2.jsonl the
// other three. Every evidentd since the first commit with a COP Ledger (1c60c08) admits
// them (the scenario is unchanged since).
//
// SCITT: two external issuers with keys derived from fixed seeds — https://build.example
// (ES256, statements naming their key by its RFC 9679 thumbprint, payload attached,
// content type application/spdx+json) and https://scanner.example (EdDSA, statements that
// are RFC 9995 hash envelopes, preimage content type application/vnd.cyclonedx+json,
// naming their key by the kid the policy gives it) — signed with go-cose directly, as a
// foreign client sends them:
//
//   - scitt-policy-1.json admits both issuers; scitt-policy-2.json the builder only;
//   - scitt-builder-1.cose and scitt-scanner-1.cose are registered under policy 1;
//   - scitt-builder-2.cose under policy 2, which refuses scitt-scanner-2.cose.
//
// Usage:
//
//	go run ./verifier/testdata/history/mkinput2 verifier/testdata/history/input
package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/veraison/go-cose"
)

// COPTopic is the chain id of the COP Topic (generate.sh names it too).
const COPTopic = "urn:cop:topic:history-1"

// scannerKID is the kid the policy gives the scanner's key (hex in the policy).
var scannerKID = []byte("scanner-2026-1")

type issuer struct {
	iss string
	alg cose.Algorithm
	key crypto.Signer
	kid []byte
}

func seed(label string) [32]byte {
	return sha256.Sum256([]byte("evident-history-corpus:scitt:" + label))
}

func newIssuer(iss string, alg cose.Algorithm, kid []byte) *issuer {
	s := seed(iss)
	var key crypto.Signer
	switch alg {
	case cose.AlgorithmEdDSA:
		key = ed25519.NewKeyFromSeed(s[:])
	case cose.AlgorithmES256:
		// A scalar below the group order (the seed's top bit cleared), fixed by the seed.
		d := s
		d[0] &= 0x7f
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:])
		check(err)
		key = k
	default:
		check(fmt.Errorf("algorithm %v", alg))
	}
	if kid == nil {
		tp, err := receipts.KeyThumbprint(key.Public())
		check(err)
		kid = tp
	}
	return &issuer{iss: iss, alg: alg, key: key, kid: kid}
}

func (is *issuer) pem() string {
	der, err := x509.MarshalPKIXPublicKey(is.key.Public())
	check(err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// sign makes a tagged COSE_Sign1 with protected {1 alg, 4 kid, 15 {1 iss, 2 sub, 6 iat}}
// and extra, the payload attached and an empty unprotected header.
func (is *issuer) sign(sub string, iat time.Time, extra cose.ProtectedHeader, payload []byte) []byte {
	signer, err := cose.NewSigner(is.alg, is.key)
	check(err)
	h := cose.ProtectedHeader{cose.HeaderLabelAlgorithm: is.alg, cose.HeaderLabelKeyID: is.kid,
		cose.HeaderLabelCWTClaims: map[any]any{int64(1): is.iss, int64(2): sub, int64(6): iat.Unix()}}
	for k, v := range extra {
		h[k] = v
	}
	msg := &cose.Sign1Message{Headers: cose.Headers{Protected: h, Unprotected: cose.UnprotectedHeader{}}, Payload: payload}
	check(msg.Sign(rand.Reader, nil, signer))
	b, err := msg.MarshalCBOR()
	check(err)
	return b
}

// sbom signs an attached SPDX document.
func (is *issuer) sbom(name, version string, iat time.Time) []byte {
	doc, err := json.Marshal(map[string]any{"spdxVersion": "SPDX-2.3", "SPDXID": "SPDXRef-DOCUMENT", "name": name + "-" + version,
		"packages": []map[string]any{{"name": name, "versionInfo": version, "SPDXID": "SPDXRef-Package"}}})
	check(err)
	return is.sign("pkg:oci/"+name+"@"+version, iat, cose.ProtectedHeader{cose.HeaderLabelContentType: "application/spdx+json"}, doc)
}

// scan signs a hash envelope (RFC 9995) of a CycloneDX scan report.
func (is *issuer) scan(name, version string, iat time.Time) []byte {
	report, err := json.Marshal(map[string]any{"bomFormat": "CycloneDX", "specVersion": "1.6",
		"components": []map[string]any{{"type": "application", "name": name, "version": version}}, "vulnerabilities": []any{}})
	check(err)
	sum := sha256.Sum256(report)
	return is.sign("pkg:oci/"+name+"@"+version, iat, cose.ProtectedHeader{
		receipts.HeaderPayloadHashAlg:      receipts.HashAlgSHA256,
		receipts.HeaderPreimageContentType: "application/vnd.cyclonedx+json",
		receipts.HeaderPayloadLocation:     "https://scanner.example/reports/" + name + "-" + version + ".cdx.json",
	}, sum[:])
}

func policy(issuers []regpolicy.Issuer, algs, cts []string) []byte {
	p := regpolicy.Policy{Format: regpolicy.Format, Issuers: issuers, Algorithms: algs, ContentTypes: cts,
		MaxSize: 16384, RequiredClaims: []string{"iat"}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	check(enc.Encode(p))
	_, err := regpolicy.Parse(buf.Bytes())
	check(err)
	return buf.Bytes()
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkinput2 DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	check(os.MkdirAll(dir, 0o755))
	write := func(name string, b []byte) {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			check(fmt.Errorf("%s exists: the corpus inputs are written once", path))
		}
		check(os.WriteFile(path, b, 0o644))
	}

	// COP: the scenario's Topic, split before the fifth event.
	recs, err := copscenario.ClaimsTopic(COPTopic, time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
	check(err)
	lines := func(rs [][]byte) []byte { return append(bytes.Join(rs, []byte("\n")), '\n') }
	write("cop1.jsonl", lines(recs[:4]))
	write("cop2.jsonl", lines(recs[4:]))

	// SCITT.
	builder := newIssuer("https://build.example", cose.AlgorithmES256, nil)
	scanner := newIssuer("https://scanner.example", cose.AlgorithmEdDSA, scannerKID)
	write("scitt-policy-1.json", policy([]regpolicy.Issuer{
		{ISS: builder.iss, Keys: []regpolicy.Key{{PEM: builder.pem()}}},
		{ISS: scanner.iss, Keys: []regpolicy.Key{{PEM: scanner.pem(), KID: hex.EncodeToString(scannerKID)}}},
	}, []string{"EdDSA", "ES256"}, []string{"application/spdx+json", "application/vnd.cyclonedx+json"}))
	write("scitt-policy-2.json", policy([]regpolicy.Issuer{
		{ISS: builder.iss, Keys: []regpolicy.Key{{PEM: builder.pem()}}},
	}, []string{"EdDSA", "ES256"}, []string{"application/spdx+json"}))
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	write("scitt-builder-1.cose", builder.sbom("app", "1.0", at))
	write("scitt-scanner-1.cose", scanner.scan("app", "1.0", at.Add(time.Minute)))
	write("scitt-builder-2.cose", builder.sbom("app", "1.1", at.Add(24*time.Hour)))
	write("scitt-scanner-2.cose", scanner.scan("app", "1.1", at.Add(24*time.Hour+time.Minute)))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkinput2:", err)
		os.Exit(1)
	}
}
