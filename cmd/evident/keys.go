package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/servicekey"
	"github.com/evident-log/evident/receipts"
)

const keysUsage = `Usage: evident keys <generate|show|thumbprint|rotate> [flags]

  generate [-type ed25519|p256] -o FILE   write a new private key (PEM; encrypted with
                                          $EVIDENT_SERVICE_KEY_PASSWORD when set)
  show FILE                               a key's type, COSE alg, RFC 9679 kid and public
                                          PEM; or the windows of a key history file
  thumbprint FILE                         the RFC 9679 thumbprint (hex kid) of a key
  rotate [-data DIR | -key FILE] [-type]  replace evidentd's statement/receipt key with a
                                          new one; the old key stays in the key history
                                          (keys/service-history.json) so everything it
                                          signed keeps verifying. Restart evidentd after.

FILE may be a PEM private or public key or a COSE_Key.
`

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand(stdout, stderr, "evident keys", keysUsage, args, "generate", "show", "thumbprint", "rotate"); !ok {
		return code
	}
	fs := flag.NewFlagSet("evident keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, keysUsage); fs.PrintDefaults() }
	password := []byte(os.Getenv("EVIDENT_SERVICE_KEY_PASSWORD"))
	switch args[0] {
	case "generate":
		typ := fs.String("type", servicekey.TypeEd25519, "key type: ed25519 or p256")
		out := fs.String("o", "", "output file (created, mode 0600; never overwritten)")
		if code, done := parseArgs(fs, args[1:]); done {
			return code
		}
		if code, ok := checkArgs(fs); !ok {
			return code
		}
		if *out == "" {
			return usageErr(fs, "missing -o FILE (where to write the new key)")
		}
		k, err := servicekey.Generate(*typ)
		if err != nil {
			return usageErr(fs, "-type: %v", err)
		}
		b, err := servicekey.EncodePEM(k, password)
		if err == nil {
			err = servicekey.WriteNew(*out, b)
		}
		if err != nil {
			fmt.Fprintln(stderr, "evident keys generate:", err)
			return exitFailure
		}
		kid, _ := servicekey.Thumbprint(k.Public())
		fmt.Fprintf(stdout, "wrote %s (%s, kid %s)\n", *out, *typ, kid)
		return 0
	case "show", "thumbprint":
		if code, done := parseArgs(fs, args[1:]); done {
			return code
		}
		if code, ok := checkArgs(fs, "FILE"); !ok {
			return code
		}
		path := fs.Arg(0)
		if args[0] == "show" {
			if b, err := os.ReadFile(path); err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
				return showHistory(stdout, stderr, b)
			}
		}
		pub, err := loadAnyPublic(path, password)
		if err != nil {
			fmt.Fprintf(stderr, "evident keys %s: %v\n", args[0], err)
			return exitFailure
		}
		kid, err := receipts.KeyThumbprint(pub)
		if err != nil {
			fmt.Fprintf(stderr, "evident keys %s: %v\n", args[0], err)
			return exitFailure
		}
		h, b64 := kidStrings(kid)
		if args[0] == "thumbprint" {
			fmt.Fprintln(stdout, h)
			return 0
		}
		der, _ := x509.MarshalPKIXPublicKey(pub)
		fmt.Fprintf(stdout, "type:      %s\nkid (hex): %s\nkid (b64): %s\n%s", keyType(pub), h, b64, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		return 0
	default: // rotate, subcommand having refused any other name
		data := fs.String("data", "evident-data", "evidentd's data directory (the key is <data>/keys/service.key)")
		key := fs.String("key", "", "the service key file (overrides -data)")
		typ := fs.String("type", servicekey.TypeEd25519, "new key type: ed25519 or p256")
		if code, done := parseArgs(fs, args[1:]); done {
			return code
		}
		if code, ok := checkArgs(fs); !ok {
			return code
		}
		path := *key
		if path == "" {
			path = filepath.Join(*data, "keys", "service.key")
		}
		oldKID, newKID, err := servicekey.Rotate(path, password, *typ, time.Now())
		if err != nil {
			fmt.Fprintln(stderr, "evident keys rotate:", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "rotated %s\n  retired kid %s (kept in %s; private key moved to %s/)\n  current kid %s\nrestart evidentd to sign with the new key\n",
			path, oldKID, servicekey.HistoryFile, servicekey.RetiredDir, newKID)
		return 0
	}
}

// loadAnyPublic reads the public key of a PEM private key (encrypted ones with password),
// a PEM public key or a COSE_Key.
func loadAnyPublic(path string, password []byte) (crypto.PublicKey, error) {
	if b, err := os.ReadFile(path); err == nil {
		if blk, _ := pem.Decode(b); blk != nil && strings.Contains(blk.Type, "ENCRYPTED") {
			k, err := servicekey.Load(path, password)
			if err != nil {
				return nil, err
			}
			return k.Public(), nil
		}
	}
	return servicekey.LoadPublic(path)
}

func keyType(pub crypto.PublicKey) string {
	switch fmt.Sprintf("%T", pub) {
	case "ed25519.PublicKey":
		return "Ed25519 (COSE alg EdDSA, -8)"
	case "*ecdsa.PublicKey":
		return "ECDSA (COSE alg ES256 -7 for P-256, ES384 -35 for P-384)"
	case "*rsa.PublicKey":
		return "RSA (COSE alg PS256, -37)"
	}
	return fmt.Sprintf("%T", pub)
}

func showHistory(stdout, stderr io.Writer, b []byte) int {
	h, err := bundle.ParseKeyHistory(b)
	if err != nil {
		fmt.Fprintln(stderr, "evident keys show:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: %d statement/receipt key(s), %d checkpoint key(s)\n", h.Format, len(h.Keys), len(h.CheckpointKeys))
	for _, k := range h.Keys {
		until := k.NotAfter
		if until == "" {
			until = "current"
		}
		fmt.Fprintf(stdout, "  kid %s  %s .. %s  (%s)\n", k.KID, k.NotBefore, until, strings.Join(k.Use, ", "))
	}
	for _, c := range h.CheckpointKeys {
		until := c.NotAfter
		if until == "" {
			until = "current"
		}
		fmt.Fprintf(stdout, "  checkpoint %s %s  %s .. %s\n", c.Role, c.VKey, c.NotBefore, until)
	}
	return 0
}
