package main

import (
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/servicekey"
)

// newKeysCmd is the `evident keys` group.
func newKeysCmd(a *app) *cobra.Command {
	return group(a, &cobra.Command{
		Use:   "keys <generate|show|thumbprint|rotate> [flags]",
		Short: "Generate, show, thumbprint and rotate service keys",
		Long: `Generates, shows, thumbprints and rotates the service's statement and receipt keys.
FILE may be a PEM private or public key or a COSE_Key; a private key encrypted with
$EVIDENT_SERVICE_KEY_PASSWORD is read with it.`,
		Example: "  evident keys generate -o service.key\n  evident keys show service.key",
	}, newKeysGenerateCmd(a), newKeysShowCmd(a, "show"), newKeysShowCmd(a, "thumbprint"), newKeysRotateCmd(a))
}

// keyOutput is what `evident keys generate|show|thumbprint --format json` writes: the key's
// file, type and RFC 9679 kid; show adds the public key. show of a key history file writes
// keyHistoryOutput instead.
type keyOutput struct {
	File      string `json:"file"`
	Type      string `json:"type,omitempty"`
	KID       string `json:"kid"`
	KIDBase64 string `json:"kid_b64"`
	PublicPEM string `json:"public_key_pem,omitempty"`
}

// keyHistoryOutput is what `evident keys show --format json` writes for a key history file.
type keyHistoryOutput struct {
	File string `json:"file"`
	bundle.KeyHistory
}

// rotateOutput is what `evident keys rotate --format json` writes.
type rotateOutput struct {
	KeyFile     string `json:"key_file"`
	RetiredKID  string `json:"retired_kid"`
	CurrentKID  string `json:"current_kid"`
	HistoryFile string `json:"history_file"`
	RetiredDir  string `json:"retired_dir"`
}

// newKeysGenerateCmd is `evident keys generate -o FILE`.
func newKeysGenerateCmd(a *app) *cobra.Command {
	var format formatFlag
	var typ, out string
	cmd := &cobra.Command{
		Use:   "generate [--type ed25519|p256] -o FILE",
		Short: "Write a new private key (PEM; encrypted with $EVIDENT_SERVICE_KEY_PASSWORD when set)",
		Long: `Writes a new service private key (PEM), created with mode 0600 and never over another file;
encrypted with $EVIDENT_SERVICE_KEY_PASSWORD when it is set.`,
		Example:           "  evident keys generate -o service.key\n  evident keys generate --type p256 -o service.key --format json",
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	newKeyFlags(cmd, &typ, &out, "key type: ed25519 or p256")
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		if code, ok := format.check(cmd); !ok {
			return code
		}
		if out == "" {
			return usageErr(cmd, "missing -o FILE (where to write the new key)")
		}
		k, err := servicekey.Generate(typ)
		if err != nil {
			return usageErr(cmd, "-type: %v", err)
		}
		b, err := servicekey.EncodePEM(k, keyPassword())
		if err == nil {
			err = servicekey.WriteNew(out, b)
		}
		if err != nil {
			fmt.Fprintln(a.stderr, "evident keys generate:", err)
			return exitFailure
		}
		kid, _ := servicekey.Thumbprint(k.Public())
		if format.json() {
			raw, _ := hex.DecodeString(kid)
			_, b64 := kidStrings(raw)
			return reportJSON(cmd, a.stdout, keyOutput{File: out, Type: typ, KID: kid, KIDBase64: b64})
		}
		fmt.Fprintf(a.stdout, "wrote %s (%s, kid %s)\n", out, typ, kid)
		return 0
	})
	return cmd
}

// keyPassword is the password of encrypted service keys, from the environment.
func keyPassword() []byte { return []byte(os.Getenv("EVIDENT_SERVICE_KEY_PASSWORD")) }

// newKeysShowCmd is `evident keys show FILE` or `evident keys thumbprint FILE`.
func newKeysShowCmd(a *app, name string) *cobra.Command {
	var format formatFlag
	cmd := &cobra.Command{
		Use:               name + " FILE",
		Short:             "A key's type, COSE alg, RFC 9679 kid and public PEM; or the windows of a key history file",
		Example:           "  evident keys show service.key\n  evident keys show keys/service-history.json --format json",
		Args:              exactArgs("FILE"),
		ValidArgsFunction: fileArgs,
	}
	if name == "thumbprint" {
		cmd.Short = "The RFC 9679 thumbprint (hex kid) of a key"
		cmd.Example = "  evident keys thumbprint service.key\n  evident keys thumbprint --format json issuer.pub"
	}
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		if code, ok := format.check(cmd); !ok {
			return code
		}
		path := args[0]
		if name == "show" {
			if b, err := os.ReadFile(path); err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
				return showHistory(cmd, a.stdout, a.stderr, path, b, format.json())
			}
		}
		pub, err := servicekey.LoadAnyPublic(path, keyPassword())
		if err != nil {
			fmt.Fprintf(a.stderr, "evident keys %s: %v\n", name, err)
			return exitFailure
		}
		kid, err := receipts.KeyThumbprint(pub)
		if err != nil {
			fmt.Fprintf(a.stderr, "evident keys %s: %v\n", name, err)
			return exitFailure
		}
		h, b64 := kidStrings(kid)
		der, _ := x509.MarshalPKIXPublicKey(pub)
		pemText := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		switch {
		case format.json() && name == "thumbprint":
			return reportJSON(cmd, a.stdout, keyOutput{File: path, KID: h, KIDBase64: b64})
		case format.json():
			return reportJSON(cmd, a.stdout, keyOutput{File: path, Type: keyType(pub), KID: h, KIDBase64: b64, PublicPEM: pemText})
		case name == "thumbprint":
			fmt.Fprintln(a.stdout, h)
		default:
			fmt.Fprintf(a.stdout, "type:      %s\nkid (hex): %s\nkid (b64): %s\n%s", keyType(pub), h, b64, pemText)
		}
		return 0
	})
	return cmd
}

// newKeysRotateCmd is `evident keys rotate`.
func newKeysRotateCmd(a *app) *cobra.Command {
	var format formatFlag
	var data, key, typ string
	cmd := &cobra.Command{
		Use:   "rotate [--data DIR | --key FILE] [--type ed25519|p256]",
		Short: "Replace evidentd's statement/receipt key with a new one; the old one stays in the key history",
		Long: `Replaces evidentd's statement/receipt key with a new one; the old key stays in the key history
(keys/service-history.json) so everything it signed keeps verifying. Restart evidentd after.`,
		Example:           "  evident keys rotate --data /var/lib/evident\n  evident keys rotate --key keys/service.key --type p256 --format json",
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().StringVar(&data, "data", "evident-data", "evidentd's data directory (the key is <data>/keys/service.key)")
	cmd.Flags().StringVar(&key, "key", "", "the service key file (overrides --data)")
	cmd.Flags().StringVar(&typ, "type", servicekey.TypeEd25519, "new key type: ed25519 or p256")
	cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"ed25519", "p256"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.MarkFlagDirname("data")
	markFiles(cmd, "key")
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		if code, ok := format.check(cmd); !ok {
			return code
		}
		path := key
		if path == "" {
			path = filepath.Join(data, "keys", "service.key")
		}
		oldKID, newKID, err := servicekey.Rotate(path, keyPassword(), typ, time.Now())
		if err != nil {
			fmt.Fprintln(a.stderr, "evident keys rotate:", err)
			return exitFailure
		}
		if format.json() {
			return reportJSON(cmd, a.stdout, rotateOutput{KeyFile: path, RetiredKID: oldKID, CurrentKID: newKID,
				HistoryFile: filepath.Join(filepath.Dir(path), servicekey.HistoryFile), RetiredDir: filepath.Join(filepath.Dir(path), servicekey.RetiredDir)})
		}
		fmt.Fprintf(a.stdout, "rotated %s\n  retired kid %s (kept in %s; private key moved to %s/)\n  current kid %s\nrestart evidentd to sign with the new key\n",
			path, oldKID, servicekey.HistoryFile, servicekey.RetiredDir, newKID)
		return 0
	})
	return cmd
}

// reportJSON writes v as the command's JSON result and returns 0, or reports why it could
// not and returns exitFailure.
func reportJSON(cmd *cobra.Command, w io.Writer, v any) int {
	if err := writeJSON(w, v); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", cmd.CommandPath(), err)
		return exitFailure
	}
	return 0
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

// showHistory shows a key history file: its keys and when each was in use.
func showHistory(cmd *cobra.Command, stdout, stderr io.Writer, path string, b []byte, asJSON bool) int {
	h, err := bundle.ParseKeyHistory(b)
	if err != nil {
		fmt.Fprintln(stderr, "evident keys show:", err)
		return exitFailure
	}
	if asJSON {
		return reportJSON(cmd, stdout, keyHistoryOutput{File: path, KeyHistory: *h})
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

// newKeyFlags declares the flags of a command that writes a new private key: its --type
// (completed) and its -o/--output file.
func newKeyFlags(cmd *cobra.Command, typ, out *string, typeHelp string) {
	cmd.Flags().StringVar(typ, "type", servicekey.TypeEd25519, typeHelp)
	cmd.Flags().StringVarP(out, "output", "o", "", "output file (created, mode 0600; never overwritten)")
	cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{servicekey.TypeEd25519, servicekey.TypeP256}, cobra.ShellCompDirectiveNoFileComp))
	markFiles(cmd, "output")
}
