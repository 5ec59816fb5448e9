package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/verifier"
)

const copLedgerLong = `Verifies a COP Ledger (COP 1.0 §9.6–9.7, JSON Lines, one record per line) offline: Evident's
own (GET /v1/chains/{topic}/cop-ledger, or chains/<dir>/cop-ledger.jsonl in a bundle) or one
imported from another Ledger-capable COP node (§11.5). Checks index +1, the prevHash chain
(a ledger may start mid-way: its first prevHash is taken as given), every node signature, and,
with --events, each record's eventHash against the event's recomputed copHash.

--key takes the node's public key: a JWK (its "kid", if any, is the keyId it verifies), a PEM
PUBLIC KEY, or a node key file (trust/cop-nodes.json of a bundle). A key without a key id
verifies records of any keyId. --max-depth and --max-record-bytes are the record limits, as
wide as the evidentd's that wrote the ledger.

Exit codes: 0 verified, 1 broken, 2 not evaluated (unsigned records or events not given),
3 could not run, 64 usage error.`

// newCOPLedgerCmd is the `evident cop-ledger` group.
func newCOPLedgerCmd(a *app) *cobra.Command {
	var (
		format        formatFlag
		keys          []string
		events        string
		allowUnsigned bool
		limits        recordLimits
	)
	verify := &cobra.Command{
		Use:   "verify LEDGER --key KEY [--key KEY...] [--events FILE] [--allow-unsigned]",
		Short: "Verify a COP Ledger (§9.6) offline: Evident's or another COP node's",
		Long:  copLedgerLong,
		Example: `  evident cop-ledger verify cop-ledger.jsonl --key node.jwk --events entries.jsonl
  evident cop-ledger verify cop-ledger.jsonl --key trust/cop-nodes.json --format json`,
		Args:              exactArgs("LEDGER"),
		ValidArgsFunction: fileArgs,
	}
	f := verify.Flags()
	f.StringArrayVar(&keys, "key", nil, "node public key file: a JWK, a PEM PUBLIC KEY or a node key file (repeatable)")
	f.StringVar(&events, "events", "", "COP Events (JSON Lines: raw events, or a bundle's entries.jsonl) to check eventHash against")
	f.BoolVar(&allowUnsigned, "allow-unsigned", false, "accept records without a signature (reported, exit 2)")
	limits.register(f)
	addFormat(verify, &format)
	markFiles(verify, "key", "events")
	verify.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return copLedgerVerify(a.ctx, cmd, args[0], keys, events, allowUnsigned, limits, &format, a.stdout, a.stderr)
	})
	return group(a, &cobra.Command{
		Use:     "cop-ledger verify LEDGER --key KEY [--key KEY...] [--events FILE] [--allow-unsigned]",
		Short:   "Verify a COP Ledger (§9.6) offline: Evident's or another COP node's",
		Long:    copLedgerLong,
		Example: "  evident cop-ledger verify cop-ledger.jsonl --key node.jwk",
	}, verify)
}

// copLedgerOutput is what `evident cop-ledger verify --format json` writes.
type copLedgerOutput struct {
	Verdict    string   `json:"verdict"` // verified, broken or not_evaluated
	Ledger     string   `json:"ledger"`
	Records    int      `json:"records"` // records that verified (before the broken one, if any)
	FirstIndex *uint64  `json:"first_index,omitempty"`
	LastIndex  *uint64  `json:"last_index,omitempty"`
	Topic      string   `json:"topic,omitempty"`
	Node       string   `json:"node,omitempty"`
	Signed     int      `json:"signed"`  // node signatures verified
	Matched    int      `json:"matched"` // eventHashes matched with their event
	Notes      []string `json:"notes"`   // what is not evaluated
	BrokenLine int      `json:"broken_line,omitempty"`
	Error      string   `json:"error,omitempty"` // why the ledger is broken
}

// copLedgerVerify verifies the ledger file at path.
func copLedgerVerify(ctx context.Context, cmd *cobra.Command, path string, keys []string, events string, allowUnsigned bool, limits recordLimits, format *formatFlag, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	lim, usage, ok := limits.get(cmd)
	if !ok {
		return usage
	}
	if len(keys) == 0 {
		return usageErr(cmd, "missing --key (the public key of the node that signed the ledger)")
	}
	text := stdout
	if format.json() {
		text = io.Discard
	}
	res := copLedgerOutput{Ledger: path, Notes: []string{}}
	done := func(code int) int {
		if format.json() {
			return orCode(reportJSON(cmd, stdout, res), code)
		}
		return code
	}
	chk := &cop.LedgerCheck{Keys: map[string]crypto.PublicKey{}, RequireSignature: !allowUnsigned}
	for _, k := range keys {
		b, err := os.ReadFile(k)
		if err != nil {
			fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
			return exitFailure
		}
		nks, err := parseLedgerKey(b)
		if err != nil {
			fmt.Fprintf(stderr, "evident cop-ledger verify: %s: %v\n", k, err)
			return exitUsage
		}
		for _, nk := range nks {
			if nk.KeyID == "" {
				chk.AnyKey = nk.Public
			} else {
				chk.Keys[nk.KeyID] = nk.Public
			}
		}
	}
	if events != "" {
		f, err := os.Open(events)
		if err != nil {
			fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
			return exitFailure
		}
		ev, err := cop.ReadEvents(f, events, verifier.MaxLineSize(lim)) // an event as large as the record limit, in an entry line
		f.Close()
		if err != nil {
			fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
			return exitFailure
		}
		chk.Events = ev
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
		return exitFailure
	}
	defer f.Close()
	scan, err := cop.ScanLedger(ctx, f, chk, lim.Check)
	if err != nil {
		fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
		return exitFailure
	}
	n, first, last := scan.Records, scan.First, scan.Last
	if scan.Err != nil {
		res.Error = cop.BrokenDetail(scan.Err)
		fmt.Fprintf(text, "BROKEN: %s line %d: %s\n", path, scan.Broken, res.Error)
		fmt.Fprintf(text, "  %d record(s) before it verified\n", n)
		res.Verdict, res.Records, res.BrokenLine, res.Signed, res.Matched = "broken", n, scan.Broken, chk.Signed, chk.Matched
		return done(exitBroken)
	}
	if n == 0 {
		fmt.Fprintf(text, "NOT EVALUATED: %s holds no ledger record\n", path)
		res.Verdict, res.Notes = "not_evaluated", []string{"the file holds no ledger record"}
		return done(exitNotEvaluated)
	}
	code := exitVerified
	verdict := "VERIFIED"
	var notes []string
	if chk.Signed < n {
		notes = append(notes, fmt.Sprintf("%d record(s) carry no signature: who wrote them is not evaluated", n-chk.Signed))
	}
	if chk.Matched < n {
		notes = append(notes, fmt.Sprintf("eventHash of %d record(s) not compared with an event (give --events)", n-chk.Matched))
	}
	if len(notes) > 0 {
		code, verdict = exitNotEvaluated, "NOT EVALUATED"
	}
	fmt.Fprintf(text, "%s: %s: %d COP Ledger record(s), index %d..%d, Topic %s, node %s\n", verdict, path, n, first.Index, last.Index, last.TopicID, last.NodeID)
	fmt.Fprintf(text, "  index +1 and the prevHash chain hold; %d node signature(s) verified; %d eventHash(es) matched their event's copHash\n", chk.Signed, chk.Matched)
	if first.Index > 0 {
		fmt.Fprintf(text, "  the ledger starts at index %d: its first prevHash is taken as given\n", first.Index)
	}
	for _, s := range notes {
		fmt.Fprintln(text, "  "+s)
	}
	res.Verdict = map[int]string{exitVerified: "verified", exitNotEvaluated: "not_evaluated"}[code]
	fi, li := uint64(first.Index), uint64(last.Index)
	res.Records, res.FirstIndex, res.LastIndex, res.Topic, res.Node = n, &fi, &li, last.TopicID, last.NodeID
	res.Signed, res.Matched = chk.Signed, chk.Matched
	if notes != nil {
		res.Notes = notes
	}
	return done(code)
}

// orCode returns first when it is not 0 (writing the report failed), else code.
func orCode(first, code int) int {
	if first != 0 {
		return first
	}
	return code
}

// parseLedgerKey reads a PEM "PUBLIC KEY" (PKIX, no key id: it verifies records of any
// keyId), or what cop.ParsePublicKey reads. PEM is read here, not in package cop: crypto/x509
// would bring the network stack into the offline verifier, which imports the profiles.
func parseLedgerKey(b []byte) ([]cop.NodeKey, error) {
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, "-----BEGIN") {
		return cop.ParsePublicKey(b)
	}
	blk, rest := pem.Decode([]byte(s))
	if blk == nil || blk.Type != "PUBLIC KEY" || len(strings.TrimSpace(string(rest))) != 0 {
		return nil, errors.New(`one PEM "PUBLIC KEY" block expected`)
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	if err := cop.CheckPublicKey(pub); err != nil {
		return nil, err
	}
	return []cop.NodeKey{{Public: pub}}, nil
}
