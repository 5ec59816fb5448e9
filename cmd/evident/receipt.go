package main

import (
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/servicekey"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

const receiptLong = `Verifies RFC 9942 COSE receipts (vds 1, RFC9162_SHA256) offline: the receipt's inclusion
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
is broken, 3 when a file cannot be read or was made by a newer Evident.`

// newReceiptCmd is the `evident receipt` group.
func newReceiptCmd(a *app) *cobra.Command {
	return group(a, &cobra.Command{
		Use:     "receipt verify [flags]",
		Short:   "Verify RFC 9942 receipts (any SCITT service's) for a statement or a transparent statement",
		Long:    receiptLong,
		Example: "  evident receipt verify --transparent seal.cose --key scitt-keys.cbor",
	}, newReceiptVerifyCmd(a))
}

// receiptFlags are the flags of evident receipt verify.
type receiptFlags struct {
	stmtPath, rcptPath, tsPath, keyPath string
	policyPath, policyKey               string
	consPath, oldRoot, newRoot          string
	oldCP, newCP, trustPath, logKey     string
	asJSON                              bool
	format                              formatFlag
}

// receiptOutput is what `evident receipt verify --format json` writes: the verdict and, by
// what was verified, the receipts of a statement (with the registration policy's re-check),
// a consistency receipt, or entry receipts.
type receiptOutput struct {
	Verdict       string               `json:"verdict"` // "verified" or "broken"
	Entry         string               `json:"entry,omitempty"`
	Receipts      []receiptResult      `json:"receipts,omitempty"`
	Policy        *receiptResult       `json:"policy,omitempty"`
	Consistency   *receiptResult       `json:"consistency,omitempty"`
	EntryReceipts []entryReceiptResult `json:"entry_receipts,omitempty"`
	Error         string               `json:"error,omitempty"` // why the statement itself is broken
}

// receiptResult is one verified or broken receipt (or policy).
type receiptResult struct {
	Index   int    `json:"index"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
}

// newReceiptVerifyCmd is `evident receipt verify`.
func newReceiptVerifyCmd(a *app) *cobra.Command {
	var fl receiptFlags
	cmd := &cobra.Command{
		Use:   "verify --key K (--statement S --receipt R | --transparent T | --consistency R ...) | --trust T RECEIPT...",
		Short: "Verify RFC 9942 receipts, consistency receipts or entry receipts offline",
		Long:  receiptLong,
		Example: `  evident receipt verify --statement s.cose --receipt r.cose --key service.pub
  evident receipt verify --transparent seal.cose --key scitt-keys.cbor --format json
  evident receipt verify --trust operator.trust.json receipt-seq4.json`,
		ValidArgsFunction: fileArgs,
	}
	f := cmd.Flags()
	f.StringVar(&fl.stmtPath, "statement", "", "signed statement (COSE_Sign1, raw CBOR)")
	f.StringVar(&fl.rcptPath, "receipt", "", "receipt (COSE_Sign1, raw CBOR)")
	f.StringVar(&fl.tsPath, "transparent", "", "transparent statement: a statement with its receipts in header 394")
	f.StringVar(&fl.keyPath, "key", "", "the transparency service's public key (PEM, COSE_Key or COSE_KeySet)")
	f.StringVar(&fl.policyPath, "policy", "", "optional: the registration policy statement the registration passed; the statement is re-checked against it")
	f.StringVar(&fl.policyKey, "policy-key", "", "key of the policy statement's signer (default: --key)")
	f.StringVar(&fl.consPath, "consistency", "", "consistency receipt (COSE_Sign1, raw CBOR) to verify between two trees")
	f.StringVar(&fl.oldRoot, "old-root", "", "with --consistency: root of the older tree (hex)")
	f.StringVar(&fl.newRoot, "new-root", "", "with --consistency: root of the newer tree (hex)")
	f.StringVar(&fl.oldCP, "old-checkpoint", "", "with --consistency: signed checkpoint of the older tree")
	f.StringVar(&fl.newCP, "new-checkpoint", "", "with --consistency: signed checkpoint of the newer tree")
	f.StringVar(&fl.trustPath, "trust", "", "a trust file (evident-trust/v1): verify the entry receipts given as arguments against it")
	f.BoolVar(&fl.asJSON, "json", false, "with --trust: one JSON object per receipt, a line each (deprecated: --format json writes one object)")
	f.StringVar(&fl.logKey, "log-key", "", "with checkpoints: the log's key: a vkey (Ed25519 or ML-DSA-44), a file holding one (trust/log.vkey) or a trust file")
	addFormat(cmd, &fl.format)
	deprecatedAlias(cmd, "json", "--format json")
	markFiles(cmd, "statement", "receipt", "transparent", "key", "policy", "policy-key", "consistency", "old-checkpoint", "new-checkpoint", "trust", "log-key")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return runReceiptVerify(cmd, &fl, args, a.stdout, a.stderr)
	})
	return cmd
}

// runReceiptVerify verifies what the flags name.
func runReceiptVerify(cmd *cobra.Command, fl *receiptFlags, args []string, stdout, stderr io.Writer) int {
	if code, ok := fl.format.check(cmd); !ok {
		return code
	}
	stmtPath, rcptPath, tsPath, keyPath := &fl.stmtPath, &fl.rcptPath, &fl.tsPath, &fl.keyPath
	policyPath, policyKey, consPath := &fl.policyPath, &fl.policyKey, &fl.consPath
	asJSON := fl.format.json()
	if fl.trustPath != "" {
		if *keyPath != "" || *stmtPath != "" || *rcptPath != "" || *tsPath != "" || *consPath != "" {
			return usageErr(cmd, "--trust takes entry receipts as arguments, without --key, --statement, --receipt, --transparent or --consistency")
		}
		if len(args) == 0 {
			return usageErr(cmd, "missing RECEIPT.json argument(s)")
		}
		return verifyEntryReceipts(stdout, stderr, fl.trustPath, args, fl.asJSON, asJSON) // entryreceipt.go
	}
	if *consPath != "" && *keyPath != "" && len(args) == 0 && *tsPath == "" && *stmtPath == "" && *rcptPath == "" {
		keys, err := readKeys(*keyPath)
		if err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
		return verifyConsistencyReceipt(stdout, stderr, *consPath, keys, fl.oldRoot, fl.newRoot, fl.oldCP, fl.newCP, fl.logKey, asJSON) // consistency.go
	}
	if *keyPath == "" {
		return usageErr(cmd, "missing --key (the transparency service's public key)")
	}
	if err := exactArgs()(cmd, args); err != nil {
		return usageErr(cmd, "%v", err)
	}
	if (*tsPath == "") == (*stmtPath == "" || *rcptPath == "") || (*tsPath != "" && (*stmtPath != "" || *rcptPath != "")) {
		return usageErr(cmd, "give --statement with --receipt, or --transparent, or --consistency with its trees")
	}
	out := receiptOutput{Verdict: "broken"}
	text := stdout
	if asJSON {
		text = io.Discard
	}
	done := func(code int) int {
		if asJSON {
			if c := reportJSON(cmd, stdout, out); c != 0 {
				return c
			}
		}
		return code
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
			fmt.Fprintln(text, "BROKEN: not a transparent statement:", err)
			out.Error = "not a transparent statement: " + err.Error()
			return done(exitBroken)
		}
		if len(rcpts) == 0 {
			fmt.Fprintln(text, "BROKEN: the transparent statement carries no receipt (header 394)")
			out.Error = "the transparent statement carries no receipt (header 394)"
			return done(exitBroken)
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
		fmt.Fprintln(text, "BROKEN: the statement is not a COSE_Sign1:", err)
		out.Error = "the statement is not a COSE_Sign1: " + err.Error()
		return done(exitBroken)
	}
	leaf := receipts.LeafHash(entry[:])
	fmt.Fprintf(text, "statement: log entry %x\n", entry)
	out.Entry = hex.EncodeToString(entry[:])
	code := exitVerified
	for i, rc := range rcpts {
		if msg, err := verifyOneReceipt(rc, leaf[:], keys); err != nil {
			fmt.Fprintf(text, "receipt %d: BROKEN: %v\n", i, err)
			out.Receipts = append(out.Receipts, receiptResult{Index: i, Verdict: "broken", Error: err.Error()})
			code = exitBroken
		} else {
			fmt.Fprintf(text, "receipt %d: verified: %s\n", i, msg)
			out.Receipts = append(out.Receipts, receiptResult{Index: i, Verdict: "verified", Detail: msg})
		}
	}
	if *policyPath != "" {
		pk := *policyKey
		if pk == "" {
			pk = *keyPath
		}
		res, c := recheckPolicy(text, stderr, stmt, *policyPath, pk)
		if c == exitFailure {
			return c
		}
		out.Policy = &res
		if c != exitVerified && code == exitVerified {
			code = c
		}
	}
	if code == exitVerified {
		out.Verdict = "verified"
		fmt.Fprintln(text, "VERDICT: VERIFIED")
	} else {
		fmt.Fprintln(text, "VERDICT: BROKEN")
	}
	return done(code)
}

// verifyOneReceipt verifies a receipt of inclusion with the key its kid names (or every key)
// and describes it.
func verifyOneReceipt(rc, leaf []byte, keys []receipts.Key) (string, error) {
	v, err := receipts.VerifyInclusionKeys(rc, leaf, keys)
	if err != nil {
		return "", err
	}
	rr := v.Receipt
	p := rr.Inclusion[0]
	s := fmt.Sprintf("alg %v, leaf %d of tree size %d, root %x, key %x", rr.Alg, p.LeafIndex, p.TreeSize, v.Root, v.Key.Thumbprint)
	if rr.Claims.Issuer != "" || rr.Claims.Subject != "" {
		s += fmt.Sprintf(", iss %q sub %q", rr.Claims.Issuer, rr.Claims.Subject)
	}
	if len(p.Path) == 0 {
		s += emptyPathNote
	}
	return s, nil
}

// emptyPathNote marks a receipt accepted with an empty proof path: RFC 9162 gives one in a
// one-leaf tree (or between equal sizes), RFC 9942's CDDL ([ + bstr ]) does not allow it.
// Such receipts are accepted so that those issued before evidentd stopped making them, and
// one-entry chain receipts, keep verifying (docs/scitt.md, "Empty proof paths").
const emptyPathNote = "; note: empty proof path (RFC 9162 allows it here, RFC 9942's CDDL does not)"

// recheckPolicy re-checks the statement against a registration policy statement signed by
// the key at keyPath.
func recheckPolicy(stdout, stderr io.Writer, stmt []byte, policyPath, keyPath string) (receiptResult, int) {
	res := receiptResult{Verdict: "broken"}
	ps, err := os.ReadFile(policyPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return res, exitFailure
	}
	keys, err := readKeys(keyPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return res, exitFailure
	}
	var p *regpolicy.Policy
	for _, k := range keys {
		if p, err = regpolicy.FromStatement(ps, k.Public); err == nil {
			break
		}
	}
	if p == nil {
		fmt.Fprintf(stdout, "policy: BROKEN: %v\n", err)
		res.Error = err.Error()
		return res, exitBroken
	}
	id, _ := regpolicy.ID(ps)
	res.Detail = "policy " + id
	if _, err := p.Check(stmt); err != nil {
		fmt.Fprintf(stdout, "policy %s: BROKEN: the statement does not pass it: %v\n", id, err)
		res.Error = "the statement does not pass it: " + err.Error()
		return res, exitBroken
	}
	fmt.Fprintf(stdout, "policy %s: verified: the statement passes the registration policy\n", id)
	res.Verdict = "verified"
	return res, exitVerified
}

// readKeys reads PEM public keys, a COSE_Key or a COSE_KeySet.
func readKeys(path string) ([]receipts.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if blk, _ := pem.Decode(b); blk != nil {
		var pub crypto.PublicKey
		if blk.Type != "PUBLIC KEY" {
			if pub, err = servicekey.LoadPublic(path); err != nil {
				return nil, err
			}
		} else if pub, err = cryptoutils.UnmarshalPEMToPublicKey(b); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		k, err := receipts.NewKey(pub, nil)
		if err != nil {
			return nil, err
		}
		return []receipts.Key{k}, nil
	}
	return receipts.ParseKeySet(path, b)
}

// kidStrings renders a kid in the two spellings people meet.
func kidStrings(kid []byte) (string, string) {
	return hex.EncodeToString(kid), base64.RawURLEncoding.EncodeToString(kid)
}
