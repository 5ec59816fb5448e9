package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/evident-log/evident/entryreceipt"
)

// entryReceiptResult is one entry receipt's line of `evident receipt verify --trust … -json`.
type entryReceiptResult struct {
	File      string   `json:"file"`
	Verdict   string   `json:"verdict"` // "verified" or "broken"
	Chain     string   `json:"chain,omitempty"`
	Seq       *uint64  `json:"seq,omitempty"`
	Link      string   `json:"link,omitempty"`
	SealSize  uint64   `json:"seal_size,omitempty"`
	SealRoot  string   `json:"seal_root,omitempty"`
	LogIndex  *uint64  `json:"log_index,omitempty"`
	TreeSize  uint64   `json:"tree_size,omitempty"`
	Witnesses []string `json:"witnesses,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// verifyEntryReceipts checks entry receipts (docs/entry-receipt.md) offline against the trust
// file: exit 0 when every one verifies, 1 when one is broken, 3 when a file cannot be read or
// needs a newer Evident.
//
// lines writes one JSON object a line per receipt (the deprecated --json); asJSON writes one
// receiptOutput object for them all.
func verifyEntryReceipts(stdout, stderr io.Writer, trustPath string, files []string, lines, asJSON bool) int {
	tf, err := readTrustFile(trustPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return exitFailure
	}
	trust, err := entryreceipt.TrustFrom(tf)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return exitFailure
	}
	code := exitVerified
	enc := json.NewEncoder(stdout)
	all := receiptOutput{Verdict: "verified", EntryReceipts: []entryReceiptResult{}}
	for _, f := range files {
		res := entryReceiptResult{File: f}
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
		r, err := entryreceipt.Parse(b)
		var v *entryreceipt.Verified
		if err == nil {
			v, err = entryreceipt.Verify(r, trust)
		}
		switch {
		case errors.Is(err, entryreceipt.ErrNewerFormat):
			fmt.Fprintf(stderr, "evident receipt verify: %s: %v\n", f, err)
			return exitFailure
		case err != nil:
			res.Verdict, res.Error = "broken", err.Error()
			code = exitBroken
		default:
			res.Verdict, res.Chain, res.Seq, res.Link = "verified", v.Chain, &v.Seq, v.Link.String()
			res.SealSize, res.SealRoot, res.LogIndex, res.TreeSize, res.Witnesses = v.Seal.Size, v.Seal.Root, &v.LogIndex, v.TreeSize, v.Witnesses
		}
		if res.Verdict == "broken" {
			all.Verdict = "broken"
		}
		switch {
		case asJSON:
			all.EntryReceipts = append(all.EntryReceipts, res)
			continue
		case lines:
			enc.Encode(res)
			continue
		}
		if res.Verdict == "broken" {
			fmt.Fprintf(stdout, "BROKEN %s: %s\n", f, res.Error)
			continue
		}
		wit := "no witness policy pinned"
		if len(v.Witnesses) > 0 {
			wit = "cosigned by " + strings.Join(v.Witnesses, ", ")
		}
		fmt.Fprintf(stdout, "VERIFIED %s: chain %s entry %d (%s, link %s) is under seal root %s (size %d), log entry %d of checkpoint %s size %d, %s\n",
			f, v.Chain, v.Seq, v.ContentType, v.Link, v.Seal.Root, v.Seal.Size, v.LogIndex, tf.Origin, v.TreeSize, wit)
	}
	if asJSON {
		if err := writeJSON(stdout, all); err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitFailure
		}
	}
	return code
}
