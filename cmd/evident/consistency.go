package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/receipts"
)

// treeHead is one end of a consistency receipt (a tree size, 0 when only a root was given,
// its root and its description) and the log key that signed its checkpoint.
type treeHead struct {
	receipts.TreeHead
	signer string // the log key that verified the checkpoint, name+hash
}

// parseRoot reads a 32-byte root written in hex, optionally prefixed "sha256:".
func parseRoot(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	if err != nil || len(b) != receipts.HashSize {
		return nil, fmt.Errorf("root %.80q is not 32 bytes of hex", s)
	}
	return b, nil
}

// readCheckpoint reads a signed checkpoint (C2SP tlog-checkpoint) and verifies its
// signature by one of the log's keys (Ed25519 or ML-DSA-44).
func readCheckpoint(path string, logKeys []note.Verifier) (treeHead, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return treeHead{}, err
	}
	origin, _, _ := bytes.Cut(raw, []byte("\n"))
	for _, k := range logKeys {
		cp, _, _, perr := tlog.ParseCheckpoint(raw, string(origin), k)
		if perr == nil {
			return treeHead{TreeHead: receipts.TreeHead{Size: cp.Size, Root: cp.Hash, Name: fmt.Sprintf("checkpoint %s (%s, size %d)", path, cp.Origin, cp.Size)},
				signer: fmt.Sprintf("%s+%08x", k.Name(), k.KeyHash())}, nil
		}
		err = perr
	}
	return treeHead{}, fmt.Errorf("%s: %w", path, err)
}

// verifyConsistencyReceipt checks an RFC 9942 consistency receipt (396 {-2: …}) between
// two tree heads: the proof leads from the old root to the new one (RFC 9162 section
// 2.1.4.2), the service's signature covers the new root, and the sizes named by the proof
// are those of the checkpoints when checkpoints were given.
//
// asJSON writes a receiptOutput object on stdout instead of the text.
func verifyConsistencyReceipt(stdout, stderr io.Writer, rcptPath string, keys []receipts.Key, oldRoot, newRoot, oldCP, newCP, logKeyPath string, asJSON bool) int {
	text := stdout
	if asJSON {
		text = io.Discard
	}
	res := receiptResult{Verdict: "broken"}
	var details []string
	done := func(code int) int {
		if asJSON {
			if code == exitVerified {
				res.Verdict = "verified"
			}
			if res.Detail == "" {
				res.Detail = strings.Join(details, "; ")
			}
			if err := writeJSON(stdout, receiptOutput{Verdict: res.Verdict, Consistency: &res}); err != nil {
				fmt.Fprintln(stderr, "evident receipt verify:", err)
				return exitFailure
			}
		}
		return code
	}
	var old, nw treeHead
	if (oldRoot == "") == (oldCP == "") || (newRoot == "") == (newCP == "") {
		fmt.Fprintln(stderr, "evident receipt verify: --consistency needs the old tree (--old-root or --old-checkpoint) and the new one (--new-root or --new-checkpoint)")
		return exitUsage
	}
	var logKeys []note.Verifier
	if oldCP != "" || newCP != "" {
		if logKeyPath == "" {
			fmt.Fprintln(stderr, "evident receipt verify: checkpoints need --log-key (the log's signed-note verifier key, trust/log.vkey, or a trust file)")
			return exitUsage
		}
		vkeys, err := readVKeys([]string{logKeyPath})
		if err == nil {
			logKeys, err = misbehaviour.Verifiers(vkeys)
		}
		if err != nil {
			fmt.Fprintln(stderr, "evident receipt verify: --log-key:", err)
			return exitUsage
		}
	}
	var err error
	for _, end := range []struct {
		th       *treeHead
		root, cp string
		name     string
	}{{&old, oldRoot, oldCP, "old"}, {&nw, newRoot, newCP, "new"}} {
		if end.cp != "" {
			if *end.th, err = readCheckpoint(end.cp, logKeys); err != nil {
				if errors.As(err, new(*fs.PathError)) { // unreadable: nothing was checked
					fmt.Fprintln(stderr, "evident receipt verify:", err)
					return exitFailure
				}
				fmt.Fprintf(text, "%s checkpoint: BROKEN: %v\nVERDICT: BROKEN\n", end.name, err)
				res.Error = fmt.Sprintf("%s checkpoint: %v", end.name, err)
				return done(exitBroken)
			}
			fmt.Fprintf(text, "%s tree: %s, signature by %s verified\n", end.name, end.th.Name, end.th.signer)
			details = append(details, fmt.Sprintf("%s tree: %s, signature by %s verified", end.name, end.th.Name, end.th.signer))
			continue
		}
		if end.th.Root, err = parseRoot(end.root); err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitUsage
		}
		end.th.Name = "root " + hex.EncodeToString(end.th.Root)
	}
	rc, err := os.ReadFile(rcptPath)
	if err != nil {
		fmt.Fprintln(stderr, "evident receipt verify:", err)
		return exitFailure
	}
	msg, err := checkConsistency(rc, keys, old, nw)
	if err != nil {
		fmt.Fprintf(text, "consistency receipt: BROKEN: %v\nVERDICT: BROKEN\n", err)
		res.Error = err.Error()
		return done(exitBroken)
	}
	fmt.Fprintf(text, "consistency receipt: verified: %s\nVERDICT: VERIFIED\n", msg)
	res.Detail = msg
	return done(exitVerified)
}

// checkConsistency verifies the consistency receipt rc between old and nw and describes it.
func checkConsistency(rc []byte, keys []receipts.Key, old, nw treeHead) (string, error) {
	v, err := receipts.VerifyConsistencyKeys(rc, keys, old.TreeHead, nw.TreeHead)
	if err != nil {
		return "", err
	}
	rr := v.Receipt
	p := rr.Consistency[0]
	s := fmt.Sprintf("tree size %d → %d, old root %x, new root %x, alg %v, key %x", p.Size1, p.Size2, old.Root, v.Root, rr.Alg, v.Key.Thumbprint)
	if rr.Claims.Issuer != "" || rr.Claims.Subject != "" {
		s += fmt.Sprintf(", iss %q sub %q", rr.Claims.Issuer, rr.Claims.Subject)
	}
	if len(p.Path) == 0 {
		s += emptyPathNote
	}
	return s, nil
}
