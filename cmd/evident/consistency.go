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

// treeHead is one end of a consistency receipt: a tree size (0 when only a root was given)
// and its root.
type treeHead struct {
	size   uint64
	root   []byte
	from   string
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
			return treeHead{size: cp.Size, root: cp.Hash, from: fmt.Sprintf("checkpoint %s (%s, size %d)", path, cp.Origin, cp.Size),
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
func verifyConsistencyReceipt(stdout, stderr io.Writer, rcptPath string, keys []keyEntry, oldRoot, newRoot, oldCP, newCP, logKeyPath string, asJSON bool) int {
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
			fmt.Fprintf(text, "%s tree: %s, signature by %s verified\n", end.name, end.th.from, end.th.signer)
			details = append(details, fmt.Sprintf("%s tree: %s, signature by %s verified", end.name, end.th.from, end.th.signer))
			continue
		}
		if end.th.root, err = parseRoot(end.root); err != nil {
			fmt.Fprintln(stderr, "evident receipt verify:", err)
			return exitUsage
		}
		end.th.from = "root " + hex.EncodeToString(end.th.root)
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

func checkConsistency(rc []byte, keys []keyEntry, old, nw treeHead) (string, error) {
	r, err := receipts.ParseReceipt(rc)
	if err != nil {
		return "", err
	}
	if len(r.Consistency) != 1 || len(r.Inclusion) != 0 {
		return "", fmt.Errorf("not a consistency receipt: %d consistency and %d inclusion proof(s)", len(r.Consistency), len(r.Inclusion))
	}
	p := r.Consistency[0]
	if old.size != 0 && p.Size1 != old.size {
		return "", fmt.Errorf("the proof starts at tree size %d, the old %s", p.Size1, old.from)
	}
	if nw.size != 0 && p.Size2 != nw.size {
		return "", fmt.Errorf("the proof ends at tree size %d, the new %s", p.Size2, nw.from)
	}
	var lastErr error = errors.New("no key to try")
	for _, k := range candidates(r, keys) {
		root, rr, err := receipts.VerifyConsistency(rc, old.root, k.pub)
		if err != nil {
			lastErr = err
			continue
		}
		if !bytes.Equal(root, nw.root) {
			return "", fmt.Errorf("the proof leads from the old root to %x, not to the new %s", root, nw.from)
		}
		s := fmt.Sprintf("tree size %d → %d, old root %x, new root %x, alg %v, key %x", p.Size1, p.Size2, old.root, root, rr.Alg, k.kid)
		if rr.Claims.Issuer != "" || rr.Claims.Subject != "" {
			s += fmt.Sprintf(", iss %q sub %q", rr.Claims.Issuer, rr.Claims.Subject)
		}
		if len(p.Path) == 0 {
			s += emptyPathNote
		}
		return s, nil
	}
	return "", lastErr
}

// candidates returns the keys to try for a receipt: those its kid names (by thumbprint or
// declared kid), a single given key, or every key when the receipt names none.
func candidates(r *receipts.Receipt, keys []keyEntry) []keyEntry {
	if len(r.KeyID) == 0 {
		return keys
	}
	var out []keyEntry
	for _, k := range keys {
		if bytes.Equal(k.kid, r.KeyID) || bytes.Equal(k.declared, r.KeyID) {
			out = append(out, k)
		}
	}
	if len(out) == 0 && len(keys) == 1 && keys[0].declared == nil {
		return keys
	}
	return out
}
