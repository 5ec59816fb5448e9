package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/misbehaviour"
)

const misbehaviourLong = `check FILE... (--log-key KEY | --trust FILE) [--format text|json]
      check proofs of misbehaviour offline against the log's pinned key: exit 1 and
      "PROVEN: the log signed two histories" when one holds, exit 0 and
      "NOT PROVEN: <reason>" for each otherwise (a forged, mismatched or malformed
      file included)
show FILE...
      what the files claim, no signature checked

FILE is a proof (evident-misbehaviour/v1), a witness's GET /<hex sha256(origin)>/forks
answer or fork record, or the witness refusal evidentd keeps. See docs/misbehaviour.md.`

// newMisbehaviourCmd is the `evident misbehaviour` group.
func newMisbehaviourCmd(a *app) *cobra.Command {
	check := &cobra.Command{
		Use:   "check FILE... (--log-key KEY... | --trust FILE) [--format text|json]",
		Short: "Check a proof that the log signed two histories (exit 1 when it holds)",
		Long:  misbehaviourLong,
		Example: `  evident misbehaviour check misbehaviour-1a2b3c4d5e6f-7-12.json --trust operator.trust.json
  evident misbehaviour check forks.json --log-key keys/log.vkey --format json`,
		Args:              minArgs("missing FILE argument"),
		ValidArgsFunction: fileArgs,
	}
	var logKeys []string
	var trustPath string
	var format formatFlag
	check.Flags().StringArrayVar(&logKeys, "log-key", nil, "pin the log's checkpoint key: a vkey (Ed25519 or ML-DSA-44), a file holding one (keys/log.vkey, a bundle's trust/log-mldsa.vkey) or a trust file; repeatable")
	check.Flags().StringVar(&trustPath, "trust", "", "pin the operator's trust file: its log keys (Ed25519 and ML-DSA-44) and witness policy, whose cosigners are listed")
	addFormat(check, &format)
	markFiles(check, "log-key", "trust")
	check.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return misbehaviourCheck(cmd, args, logKeys, trustPath, &format, a.stdout, a.stderr)
	})
	show := &cobra.Command{
		Use:               "show FILE...",
		Short:             "What the files claim, no signature checked",
		Long:              misbehaviourLong,
		Example:           "  evident misbehaviour show forks.json",
		Args:              minArgs("missing FILE argument"),
		ValidArgsFunction: fileArgs,
	}
	show.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return misbehaviourShow(cmd, args, a.stdout, a.stderr)
	})
	return group(a, &cobra.Command{
		Use:     "misbehaviour <check|show> [flags] FILE...",
		Short:   "Check or show proofs that the log signed two histories",
		Long:    misbehaviourLong,
		Example: "  evident misbehaviour check proof.json --trust operator.trust.json",
	}, check, show)
}

// record is one proof found in a file given on the command line, or the reason none was.
type record struct {
	File  string // as given
	Index int    // 1-based, among the file's proofs
	Count int    // proofs in the file
	Proof *misbehaviour.Proof
	Err   error // the file holds no readable proof
}

// readProofRecords reads every file given. A file that does not exist is a usage error, one that
// cannot be read could not run; a file that holds no proof becomes a record with Err.
func readProofRecords(cmd *cobra.Command, files []string, stderr io.Writer) ([]record, int, bool) {
	var out []record
	for _, name := range files {
		b, err := readAtMost(name, misbehaviour.MaxSize) // ParseAll refuses one over the limit, with the reason
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, usageErr(cmd, "%v", err), false
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
			return nil, exitFailure, false
		}
		ps, err := misbehaviour.ParseSome(b)
		if err != nil {
			out = append(out, record{File: name, Index: 1, Count: 1, Err: err})
			continue
		}
		for i, p := range ps {
			out = append(out, record{File: name, Index: i + 1, Count: len(ps), Proof: p})
		}
	}
	return out, 0, true
}

// misbehaviourCheck is evident misbehaviour check.
func misbehaviourCheck(cmd *cobra.Command, files, logKeys []string, trustPath string, format *formatFlag, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	keys, code, ok := pinnedKeys(cmd, logKeys, trustPath)
	if !ok {
		return code
	}
	recs, code, ok := readProofRecords(cmd, files, stderr)
	if !ok {
		return code
	}
	results := make([]checked, len(recs))
	proven := false
	for i, r := range recs {
		results[i] = checkRecord(r, keys)
		proven = proven || results[i].Proven
	}
	var err error
	if format.json() {
		err = writeCheckJSON(stdout, proven, results)
	} else {
		err = writeCheckText(stdout, results)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return exitFailure
	}
	if proven {
		return exitBroken
	}
	return exitVerified
}

// pinnedKeys gathers the keys a proof is checked against: --log-key values and the trust
// file's log keys and witness policy. Nothing pinned is a usage error: a proof is only a
// proof against a key the user trusts.
func pinnedKeys(cmd *cobra.Command, logKeys []string, trustPath string) (misbehaviour.Keys, int, bool) {
	var keys misbehaviour.Keys
	if trustPath != "" {
		tf, err := readTrustFile(trustPath)
		if err != nil {
			return keys, usageErr(cmd, "-trust: %v", err), false
		}
		if keys.Witnesses, err = tf.Policy(); err != nil {
			return keys, usageErr(cmd, "-trust: %v", err), false
		}
		logKeys = append(slices.Clone(logKeys), trustPath) // readVKeys takes a trust file's log keys
	}
	vkeys, err := readVKeys(logKeys)
	if err != nil {
		return keys, usageErr(cmd, "-log-key: %v", err), false
	}
	if len(vkeys) == 0 {
		return keys, usageErr(cmd, "no log key pinned: give --log-key KEY or --trust FILE (a proof is only a proof against a key you trust)"), false
	}
	keys.LogKeys = vkeys
	return keys, 0, true
}

// checked is the outcome of checking one record; its JSON form is documented in
// docs/misbehaviour.md.
type checked struct {
	File        string        `json:"file"`
	Record      int           `json:"record"`
	Proven      bool          `json:"proven"`
	Reason      string        `json:"reason"`
	Origin      string        `json:"origin,omitempty"`
	Kind        string        `json:"kind,omitempty"`
	Observer    string        `json:"observer,omitempty"`
	Observed    string        `json:"observed,omitempty"`
	Checkpoints []checkedSide `json:"checkpoints,omitempty"`
	References  *refCount     `json:"references,omitempty"`
	count       int
}

// checkedSide is one checkpoint of a proven record.
type checkedSide struct {
	Size    uint64 `json:"size"`
	Root    string `json:"root"` // base64
	Signer  string `json:"signer"`
	KeyType string `json:"key_type"` // ed25519 or ml-dsa-44
	// Cosigners are the pinned policy's witnesses whose cosignature verified; null when no
	// witness policy was pinned.
	Cosigners []string `json:"cosigners"`
}

// refCount says how many reference checkpoints a proof keeps and how many the log key signed.
type refCount struct {
	Kept     int `json:"kept"`
	Verified int `json:"verified"`
}

// checkRecord checks one record against the pinned keys.
func checkRecord(r record, keys misbehaviour.Keys) checked {
	c := checked{File: r.File, Record: r.Index, count: r.Count}
	if r.Err != nil {
		c.Reason = fmt.Sprintf("the file holds no proof of misbehaviour: %v", r.Err)
		return c
	}
	res := misbehaviour.Check(r.Proof, keys)
	c.Proven, c.Reason, c.Origin, c.Kind = res.Proven, res.Reason, res.Origin, res.Kind
	if !res.Proven {
		return c
	}
	c.Observer, c.Observed = r.Proof.Observer, r.Proof.Observed
	for _, s := range res.Sides {
		cs := checkedSide{Size: s.Size, Root: base64.StdEncoding.EncodeToString(s.Root), Signer: s.Signer, KeyType: keys.KeyType(s.Signer), Cosigners: s.Cosigners}
		if keys.Witnesses != nil && cs.Cosigners == nil {
			cs.Cosigners = []string{}
		}
		c.Checkpoints = append(c.Checkpoints, cs)
	}
	c.References = &refCount{Kept: len(r.Proof.References), Verified: res.References}
	return c
}

// writeCheckText writes the results, proven ones first, so that the first line is the verdict.
func writeCheckText(w io.Writer, results []checked) error {
	var b bytes.Buffer
	ordered := slices.Clone(results)
	slices.SortStableFunc(ordered, func(x, y checked) int {
		switch {
		case x.Proven == y.Proven:
			return 0
		case x.Proven:
			return -1
		}
		return 1
	})
	for _, c := range ordered {
		where := c.File
		if c.count > 1 {
			where = fmt.Sprintf("%s, record %d of %d", c.File, c.Record, c.count)
		}
		if !c.Proven {
			fmt.Fprintf(&b, "NOT PROVEN: %s\n  file: %s\n", c.Reason, where)
			continue
		}
		fmt.Fprintf(&b, "PROVEN: the log signed two histories\n  file: %s\n  reason: %s\n  origin: %s\n  kind: %s\n", where, c.Reason, c.Origin, c.Kind)
		for i, s := range c.Checkpoints {
			cos := "not checked (no witness policy pinned; --trust pins one)"
			switch {
			case len(s.Cosigners) > 0:
				cos = strings.Join(s.Cosigners, ", ")
			case s.Cosigners != nil:
				cos = "none of the pinned policy's witnesses"
			}
			fmt.Fprintf(&b, "  checkpoint %d: tree size %d, root %s\n    signed by the pinned %s key %s\n    cosigned by: %s\n", i+1, s.Size, s.Root, s.KeyType, s.Signer, cos)
		}
		if c.Observer != "" || c.Observed != "" {
			fmt.Fprintf(&b, "  found by (as the file says): %s at %s\n", dashIfEmpty(c.Observer), dashIfEmpty(c.Observed))
		}
		fmt.Fprintf(&b, "  references: %d kept, %d signed by the pinned key\n", c.References.Kept, c.References.Verified)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeCheckJSON writes {"proven": …, "results": […]} in the files' order.
func writeCheckJSON(w io.Writer, proven bool, results []checked) error {
	b, err := json.MarshalIndent(struct {
		Proven  bool      `json:"proven"`
		Results []checked `json:"results"`
	}{proven, results}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// misbehaviourShow is evident misbehaviour show: the files' claims, no signature checked.
func misbehaviourShow(cmd *cobra.Command, args []string, stdout, stderr io.Writer) int {
	recs, code, ok := readProofRecords(cmd, args, stderr)
	if !ok {
		return code
	}
	var b bytes.Buffer
	b.WriteString("UNVERIFIED: what the files claim; no signature is checked (evident misbehaviour check does)\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "%s", r.File)
		if r.Count > 1 {
			fmt.Fprintf(&b, ", record %d of %d", r.Index, r.Count)
		}
		if r.Err != nil {
			fmt.Fprintf(&b, ": no proof: %v\n", r.Err)
			continue
		}
		p := r.Proof
		fmt.Fprintf(&b, ":\n  claims: %s\n  origin: %s\n  found by: %s at %s\n", p.Kind, p.Origin, dashIfEmpty(p.Observer), dashIfEmpty(p.Observed))
		for i, n := range p.Checkpoints {
			fmt.Fprintf(&b, "  checkpoint %d: %s\n", i+1, claimedCheckpoint(n))
		}
		fmt.Fprintf(&b, "  consistency proof: %d hashes\n  references: %d\n", len(p.ConsistencyProof), len(p.References))
	}
	if _, err := stdout.Write(b.Bytes()); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return exitFailure
	}
	return exitVerified
}

// claimedCheckpoint describes a checkpoint note as it reads, signatures unchecked.
func claimedCheckpoint(n string) string {
	c, err := misbehaviour.ClaimOf(n)
	if err != nil {
		return fmt.Sprintf("unreadable (%v)", err)
	}
	return c.String()
}

// dashIfEmpty returns s, or "-" when it is empty.
func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
