package main

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/evident-log/evident/internal/evidentd/servicekey"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/fxamacker/cbor/v2"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

const receiptUsage = `Usage: evident receipt verify [flags]

Verifies RFC 9942 COSE receipts (vds 1, RFC9162_SHA256) offline: the receipt's inclusion
proof leads from the statement's log entry (SHA-256 of the statement with an empty
unprotected header) to a root, and the receipt's signature over that root verifies with
the transparency service's key. Works for receipts of any service, not only Evident's.

  evident receipt verify --statement S --receipt R --key K
  evident receipt verify --transparent T --key K        (every receipt in header 394)
  evident receipt verify --consistency R --key K --old-root H1 --new-root H2
  evident receipt verify --consistency R --key K --log-key V --old-checkpoint C1 --new-checkpoint C2
                                                        (a consistency receipt, 396 {-2: …})
  evident receipt verify --trust TRUST.json RECEIPT.json...
                                                        (entry receipts evident-entry-receipt/v1, as
                                                        GET …/entries/{seq}/entry-receipt and the CHAP
                                                        adapters' audit.submit_to_scitt answer them)

K is the service's public key: PEM "PUBLIC KEY", a COSE_Key, or a COSE_KeySet (as served
at /.well-known/scitt-keys; the receipt's kid picks the key).

An entry receipt is checked against the trust file alone (evident trust fetch): the entry
statement and its chain receipt, the seal and its log receipt, the checkpoint's log signature
and its witness quorum (docs/entry-receipt.md). Exit 0 when every receipt verifies, 1 when one
is broken, 3 when a file cannot be read or was made by a newer Evident.

Flags:
`

func cmdReceipt(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand(stdout, stderr, "evident receipt", receiptUsage, args, "verify"); !ok {
		return code
	}
	fs := flag.NewFlagSet("evident receipt verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stmtPath := fs.String("statement", "", "signed statement (COSE_Sign1, raw CBOR)")
	rcptPath := fs.String("receipt", "", "receipt (COSE_Sign1, raw CBOR)")
	tsPath := fs.String("transparent", "", "transparent statement: a statement with its receipts in header 394")
	keyPath := fs.String("key", "", "the transparency service's public key (PEM, COSE_Key or COSE_KeySet)")
	policyPath := fs.String("policy", "", "optional: the registration policy statement the registration passed; the statement is re-checked against it")
	policyKey := fs.String("policy-key", "", "key of the policy statement's signer (default: --key)")
	consPath := fs.String("consistency", "", "consistency receipt (COSE_Sign1, raw CBOR) to verify between two trees")
	oldRoot := fs.String("old-root", "", "with --consistency: root of the older tree (hex)")
	newRoot := fs.String("new-root", "", "with --consistency: root of the newer tree (hex)")
	oldCP := fs.String("old-checkpoint", "", "with --consistency: signed checkpoint of the older tree")
	newCP := fs.String("new-checkpoint", "", "with --consistency: signed checkpoint of the newer tree")
	trustPath := fs.String("trust", "", "a trust file (evident-trust/v1): verify the entry receipts given as arguments against it")
	asJSON := fs.Bool("json", false, "with --trust: one JSON object per receipt")
	logKey := fs.String("log-key", "", "with checkpoints: the log's key: a vkey (Ed25519 or ML-DSA-44), a file holding one (trust/log.vkey) or a trust file")
	fs.Usage = func() { fmt.Fprint(stderr, receiptUsage); fs.PrintDefaults() }
	if code, done := parseArgs(fs, args[1:]); done {
		return code
	}
	if *trustPath != "" {
		if *keyPath != "" || *stmtPath != "" || *rcptPath != "" || *tsPath != "" || *consPath != "" {
			return usageErr(fs, "--trust takes entry receipts as arguments, without --key, --statement, --receipt, --transparent or --consistency")
		}
		if fs.NArg() == 0 {
			return usageErr(fs, "missing RECEIPT.json argument(s)")
		}
		return verifyEntryReceipts(stdout, stderr, *trustPath, fs.Args(), *asJSON) // entryreceipt.go
	}
	if *consPath != "" && *keyPath != "" && fs.NArg() == 0 && *tsPath == "" && *stmtPath == "" && *rcptPath == "" {
		keys, err := readKeys(*keyPath)
		if err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
		return verifyConsistencyReceipt(stdout, stderr, *consPath, keys, *oldRoot, *newRoot, *oldCP, *newCP, *logKey) // consistency.go
	}
	if *keyPath == "" {
		return usageErr(fs, "missing --key (the transparency service's public key)")
	}
	if code, ok := checkArgs(fs); !ok {
		return code
	}
	if (*tsPath == "") == (*stmtPath == "" || *rcptPath == "") || (*tsPath != "" && (*stmtPath != "" || *rcptPath != "")) {
		return usageErr(fs, "give --statement with --receipt, or --transparent, or --consistency with its trees")
	}
	keys, err := readKeys(*keyPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return exitFailure
	}
	var stmt []byte
	var rcpts [][]byte
	if *tsPath != "" {
		ts, err := os.ReadFile(*tsPath)
		if err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
		if stmt, rcpts, err = receipts.SplitTransparent(ts); err != nil {
			fmt.Fprintln(stdout, "BROKEN: not a transparent statement:", err)
			return exitBroken
		}
		if len(rcpts) == 0 {
			fmt.Fprintln(stdout, "BROKEN: the transparent statement carries no receipt (header 394)")
			return exitBroken
		}
	} else {
		if stmt, err = os.ReadFile(*stmtPath); err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
		r, err := os.ReadFile(*rcptPath)
		if err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
		rcpts = [][]byte{r}
	}
	entry, err := receipts.EntryHash(stmt)
	if err != nil {
		fmt.Fprintln(stdout, "BROKEN: the statement is not a COSE_Sign1:", err)
		return exitBroken
	}
	leaf := receipts.LeafHash(entry[:])
	fmt.Fprintf(stdout, "statement: log entry %x\n", entry)
	code := exitVerified
	for i, rc := range rcpts {
		if msg, err := verifyOneReceipt(rc, leaf[:], keys); err != nil {
			fmt.Fprintf(stdout, "receipt %d: BROKEN: %v\n", i, err)
			code = exitBroken
		} else {
			fmt.Fprintf(stdout, "receipt %d: verified: %s\n", i, msg)
		}
	}
	if *policyPath != "" {
		pk := *policyKey
		if pk == "" {
			pk = *keyPath
		}
		if c := recheckPolicy(stdout, stderr, stmt, *policyPath, pk); c != exitVerified && code == exitVerified {
			code = c
		}
	}
	if code == exitVerified {
		fmt.Fprintln(stdout, "VERDICT: VERIFIED")
	} else {
		fmt.Fprintln(stdout, "VERDICT: BROKEN")
	}
	return code
}

// verifyOneReceipt verifies a receipt of inclusion with the key its kid names (or every key).
func verifyOneReceipt(rc, leaf []byte, keys []keyEntry) (string, error) {
	r, err := receipts.ParseReceipt(rc)
	if err != nil {
		return "", err
	}
	cands := keys
	if len(r.KeyID) > 0 {
		cands = nil
		for _, k := range keys {
			if bytes.Equal(k.kid, r.KeyID) || bytes.Equal(k.declared, r.KeyID) {
				cands = append(cands, k)
			}
		}
		if len(cands) == 0 && len(keys) == 1 && keys[0].declared == nil {
			cands = keys // a single pinned key whose kid the service spells its own way
		}
		if len(cands) == 0 {
			return "", fmt.Errorf("the receipt names kid %x, which is not among the given keys", r.KeyID)
		}
	}
	var lastErr error
	for _, k := range cands {
		root, rr, err := receipts.VerifyInclusion(rc, leaf, k.pub)
		if err == nil {
			p := rr.Inclusion[0]
			s := fmt.Sprintf("alg %v, leaf %d of tree size %d, root %x, key %x", rr.Alg, p.LeafIndex, p.TreeSize, root, k.kid)
			if rr.Claims.Issuer != "" || rr.Claims.Subject != "" {
				s += fmt.Sprintf(", iss %q sub %q", rr.Claims.Issuer, rr.Claims.Subject)
			}
			if len(p.Path) == 0 {
				s += emptyPathNote
			}
			return s, nil
		}
		lastErr = err
	}
	return "", lastErr
}

// emptyPathNote marks a receipt accepted with an empty proof path: RFC 9162 gives one in a
// one-leaf tree (or between equal sizes), RFC 9942's CDDL ([ + bstr ]) does not allow it.
// Such receipts are accepted so that those issued before evidentd stopped making them, and
// one-entry chain receipts, keep verifying (docs/scitt.md, "Empty proof paths").
const emptyPathNote = "; note: empty proof path (RFC 9162 allows it here, RFC 9942's CDDL does not)"

func recheckPolicy(stdout, stderr io.Writer, stmt []byte, policyPath, keyPath string) int {
	ps, err := os.ReadFile(policyPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return exitFailure
	}
	keys, err := readKeys(keyPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return exitFailure
	}
	var p *regpolicy.Policy
	for _, k := range keys {
		if p, err = regpolicy.FromStatement(ps, k.pub); err == nil {
			break
		}
	}
	if p == nil {
		fmt.Fprintf(stdout, "policy: BROKEN: %v\n", err)
		return exitBroken
	}
	id, _ := regpolicy.ID(ps)
	if _, err := p.Check(stmt); err != nil {
		fmt.Fprintf(stdout, "policy %s: BROKEN: the statement does not pass it: %v\n", id, err)
		return exitBroken
	}
	fmt.Fprintf(stdout, "policy %s: verified: the statement passes the registration policy\n", id)
	return exitVerified
}

type keyEntry struct {
	pub      crypto.PublicKey
	kid      []byte // RFC 9679 thumbprint
	declared []byte // kid (2) written in the COSE_Key, if any
}

// readKeys reads PEM public keys, a COSE_Key or a COSE_KeySet.
func readKeys(path string) ([]keyEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []keyEntry
	add := func(pub crypto.PublicKey, declared []byte) error {
		kid, err := receipts.KeyThumbprint(pub)
		if err != nil {
			return err
		}
		out = append(out, keyEntry{pub: pub, kid: kid, declared: declared})
		return nil
	}
	if blk, _ := pem.Decode(b); blk != nil {
		if blk.Type != "PUBLIC KEY" {
			pub, err := servicekey.LoadPublic(path)
			if err != nil {
				return nil, err
			}
			return out, add(pub, nil)
		}
		pubs, err := cryptoutils.UnmarshalPEMToPublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return out, add(pubs, nil)
	}
	var list []cbor.RawMessage
	if err := cbor.Unmarshal(b, &list); err != nil {
		list = []cbor.RawMessage{b} // a single COSE_Key
	}
	for i, kb := range list {
		pub, err := receipts.ParseCOSEKey(kb)
		if err != nil {
			return nil, fmt.Errorf("%s: key %d: %w", path, i, err)
		}
		var m map[int64]cbor.RawMessage
		var declared []byte
		if cbor.Unmarshal(kb, &m) == nil {
			if raw, ok := m[2]; ok {
				cbor.Unmarshal(raw, &declared)
			}
		}
		if err := add(pub, declared); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no key", path)
	}
	return out, nil
}

// kidStrings renders a kid in the two spellings people meet.
func kidStrings(kid []byte) (string, string) {
	return hex.EncodeToString(kid), base64.RawURLEncoding.EncodeToString(kid)
}
