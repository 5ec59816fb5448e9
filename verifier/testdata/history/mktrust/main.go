// Command mktrust writes the trust file (evident-trust/v1) generate.sh records beside each
// bundle of the corpus: the keys the evidentd that exported the bundle held in its data
// directory, read from there and not from the bundle, so that the test pins them the way
// `evident verify --trust` pins an operator's published keys.
//
//	mktrust -origin ORIGIN -log-vkey FILE [-log-vkey FILE] [-mldsa-vkey FILE]
//	        -issuer-key PEM [-issuer-key PEM] [-witness-policy FILE] > trust.json
//
// -issuer-key takes a PEM private or public key (the service key file of the data
// directory, or a copy kept before a rotation).
package main

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var logKeys, mldsaKeys, issuers list
	origin := flag.String("origin", "", "log origin")
	flag.Var(&logKeys, "log-vkey", "file holding the log's Ed25519 vkey (repeatable)")
	flag.Var(&mldsaKeys, "mldsa-vkey", "file holding the log's ML-DSA-44 vkey (repeatable)")
	flag.Var(&issuers, "issuer-key", "PEM private or public service key (repeatable)")
	policy := flag.String("witness-policy", "", "the log's witness policy file (tlog-policy)")
	flag.Parse()
	f := trustfile.File{Format: trustfile.Format, Origin: *origin}
	for _, p := range logKeys {
		f.LogKeys = append(f.LogKeys, line(p))
	}
	for _, p := range mldsaKeys {
		f.LogMLDSAKeys = append(f.LogMLDSAKeys, line(p))
	}
	seen := map[string]bool{}
	for _, p := range issuers {
		pub, err := publicKey(p)
		check(err)
		k, err := trustfile.IssuerKeyOf(pub, "", "")
		check(err)
		if !seen[k.KID] {
			seen[k.KID] = true
			f.IssuerKeys = append(f.IssuerKeys, k)
		}
	}
	if *policy != "" {
		b, err := os.ReadFile(*policy)
		check(err)
		pol, err := tlogpolicy.Parse(b)
		check(err)
		f.WitnessPolicy = pol.String()
	}
	b, err := f.Marshal()
	check(err)
	_, err = trustfile.Parse(b)
	check(err)
	os.Stdout.Write(b)
}

func line(path string) string {
	b, err := os.ReadFile(path)
	check(err)
	return strings.TrimSpace(string(b))
}

func publicKey(path string) (crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s.Public(), nil
		}
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k.Public(), nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k.Public(), nil
	}
	if k, err := x509.ParsePKIXPublicKey(blk.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New(path + ": not a PEM key mktrust reads")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mktrust:", err)
		os.Exit(1)
	}
}
