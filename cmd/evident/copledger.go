package main

import (
	"bufio"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/evident-log/evident/internal/rawjson"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/verifier"
)

const copLedgerUsage = `Usage: evident cop-ledger verify LEDGER --key KEY [--key KEY…] [--events FILE] [--allow-unsigned]

Verifies a COP Ledger (COP 1.0 §9.6–9.7, JSON Lines, one record per line) offline: Evident's
own (GET /v1/chains/{topic}/cop-ledger, or chains/<dir>/cop-ledger.jsonl in a bundle) or one
imported from another Ledger-capable COP node (§11.5). Checks index +1, the prevHash chain
(a ledger may start mid-way: its first prevHash is taken as given), every node signature, and,
with --events, each record's eventHash against the event's recomputed copHash.

  --key KEY        the node's public key: a JWK (its "kid", if any, is the keyId it verifies),
                   a PEM PUBLIC KEY, or a node key file (trust/cop-nodes.json of a bundle).
                   A key without a key id verifies records of any keyId. Repeatable.
  --events FILE    COP Events as JSON Lines (raw events, or a bundle's entries.jsonl)
  --allow-unsigned accept records without a signature (reported, exit 2)
  --max-depth N, --max-record-bytes N
                   the record limits, as wide as the evidentd's that wrote the ledger
                   (defaults 100000 levels, 33554432 bytes)

Exit codes: 0 verified, 1 broken, 2 not evaluated (unsigned records or events not given),
3 could not run, 64 usage error.
`

type keyFiles []string

func (k *keyFiles) String() string     { return strings.Join(*k, ",") }
func (k *keyFiles) Set(s string) error { *k = append(*k, s); return nil }

func cmdCOPLedger(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand(stdout, stderr, "evident cop-ledger", copLedgerUsage, args, "verify"); !ok {
		return code
	}
	fs := flag.NewFlagSet("evident cop-ledger verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, copLedgerUsage) }
	var keys keyFiles
	fs.Var(&keys, "key", "node public key file (repeatable)")
	events := fs.String("events", "", "COP Events (JSON Lines) to check eventHash against")
	allowUnsigned := fs.Bool("allow-unsigned", false, "accept unsigned records")
	var limits recordLimits
	limits.register(fs)
	if code, done := parseArgs(fs, args[1:]); done { // flags may follow the ledger file
		return code
	}
	if code, ok := checkArgs(fs, "LEDGER"); !ok {
		return code
	}
	lim, usage, ok := limits.get(fs)
	if !ok {
		return usage
	}
	if len(keys) == 0 {
		return usageErr(fs, "missing --key (the public key of the node that signed the ledger)")
	}
	pos := fs.Args()
	chk := &cop.LedgerCheck{Keys: map[string]crypto.PublicKey{}, RequireSignature: !*allowUnsigned}
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
	if *events != "" {
		ev, err := readEvents(*events, lim)
		if err != nil {
			fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
			return exitFailure
		}
		chk.Events = ev
	}
	f, err := os.Open(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
		return exitFailure
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var n int
	var first, last cop.LedgerRecord
	for {
		if err := ctx.Err(); err != nil {
			fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
			return exitFailure
		}
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			fmt.Fprintln(stderr, "evident cop-ledger verify:", err)
			return exitFailure
		}
		line = []byte(strings.TrimRight(string(line), "\r\n"))
		if len(line) == 0 {
			continue
		}
		cerr := lim.Check(line) // the ledger's lines are records: the limits apply before they are parsed
		if cerr == nil {
			cerr = chk.Next(line)
		}
		if cerr != nil {
			var le *cop.LedgerError
			if errors.As(cerr, &le) {
				fmt.Fprintf(stdout, "BROKEN: %s line %d: %s\n", pos[0], n+1, le.Detail)
			} else {
				fmt.Fprintf(stdout, "BROKEN: %s line %d: %v\n", pos[0], n+1, cerr)
			}
			fmt.Fprintf(stdout, "  %d record(s) before it verified\n", n)
			return exitBroken
		}
		if n == 0 {
			first = chk.Last
		}
		last = chk.Last
		n++
		if err == io.EOF {
			break
		}
	}
	if n == 0 {
		fmt.Fprintf(stdout, "NOT EVALUATED: %s holds no ledger record\n", pos[0])
		return exitNotEvaluated
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
	fmt.Fprintf(stdout, "%s: %s: %d COP Ledger record(s), index %d..%d, Topic %s, node %s\n", verdict, pos[0], n, first.Index, last.Index, last.TopicID, last.NodeID)
	fmt.Fprintf(stdout, "  index +1 and the prevHash chain hold; %d node signature(s) verified; %d eventHash(es) matched their event's copHash\n", chk.Signed, chk.Matched)
	if first.Index > 0 {
		fmt.Fprintf(stdout, "  the ledger starts at index %d: its first prevHash is taken as given\n", first.Index)
	}
	for _, s := range notes {
		fmt.Fprintln(stdout, "  "+s)
	}
	return code
}

// parseLedgerKey reads a PEM "PUBLIC KEY" (PKIX) or what cop.ParsePublicKey reads.
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

// readEvents reads COP Events from JSON Lines: raw events, or entry lines carrying "record".
func readEvents(path string, lim canonical.Limits) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), verifier.MaxLineSize(lim)) // an event as large as the record limit, in an entry line
	for i := 1; sc.Scan(); i++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		rec := append([]byte(nil), line...)
		if r, ok, err := rawjson.Member(line, "record"); err == nil && ok && len(r) > 0 { // not encoding/json: deep records
			rec = append([]byte(nil), r...)
		}
		e, err := cop.Parse(rec)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i, err)
		}
		out[e.ID] = rec
	}
	return out, sc.Err()
}
