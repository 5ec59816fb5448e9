package verifier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// addLogProofs writes log/consistency/<a>-<top>.proof for every checkpoint file below the largest.
func addLogProofs(t *testing.T, b *testbundle.Bundle) {
	t.Helper()
	var sizes []uint64
	for name := range b.Files {
		if strings.HasPrefix(name, "log/checkpoints/") {
			var s uint64
			if _, err := fmtSscan(strings.TrimSuffix(strings.TrimPrefix(name, "log/checkpoints/"), ".checkpoint"), &s); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, s)
		}
	}
	var top uint64
	for _, s := range sizes {
		top = max(top, s)
	}
	for _, s := range sizes {
		if s == top {
			continue
		}
		p, err := b.LogTree.ConsistencyProof(s, top)
		if err != nil {
			t.Fatal(err)
		}
		b.Files[bundle.LogConsistencyFile(s, top)] = bundle.MarshalConsistencyProof(p)
	}
	b.Digests()
}

// addChainProofs writes chains/<dir>/proofs/consistency-<n-1>-<n>.cose between successive seals.
func addChainProofs(t *testing.T, b *testbundle.Bundle, chain string, sealSizes []uint64) {
	t.Helper()
	tree := testonly.New(rfc6962.DefaultHasher)
	for _, l := range b.Lines() {
		var e bundle.EntryLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		tree.AppendData(e.Link[:])
	}
	for i := 1; i < len(sealSizes); i++ {
		a, z := sealSizes[i-1], sealSizes[i]
		p, err := tree.ConsistencyProof(a, z)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := receipts.SignRoot(b.Issuer, receipts.Claims{Issuer: "https://evident.test", Subject: chain, IssuedAt: testbundle.Base.Unix()}, tree.HashAt(z))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := receipts.NewConsistencyReceipt(rs, receipts.ConsistencyProof{Size1: a, Size2: z, Path: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Files[bundle.ChainConsistencyFile(b.Dir, uint64(i-1), uint64(i))] = rc
	}
	b.Digests()
}

func fmtSscan(s string, v *uint64) (int, error) {
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, bundle.ErrProof
		}
		n = n*10 + uint64(c-'0')
	}
	*v = n
	return 1, nil
}

func one(t *testing.T, rep *verifier.Report, name verifier.CheckName, st verifier.Status, code verifier.Code) verifier.Check {
	t.Helper()
	for _, c := range checksNamed(rep, name) {
		if c.Status == st && c.Code == code {
			return c
		}
	}
	t.Fatalf("no %s check %s/%s\n%s", name, st, code, text(t, rep))
	return verifier.Check{}
}

func TestLogConsistencyProofs(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{4, 8, 12}, CheckpointFiles: true})
	addLogProofs(t, b)
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.Verified {
		t.Fatalf("verdict %s\n%s", rep.Verdict, text(t, rep))
	}
	c := one(t, rep, "log.consistency", verifier.Verified, "")
	if !strings.Contains(c.Detail, "2 of 2 tree sizes") {
		t.Errorf("detail %q", c.Detail)
	}

	tests := []struct {
		name   string
		tamper func(b *testbundle.Bundle)
		status verifier.Status
		code   verifier.Code
	}{
		{"proof removed", func(b *testbundle.Bundle) {
			for n := range b.Files {
				if strings.HasPrefix(n, "log/consistency/") {
					delete(b.Files, n)
					break
				}
			}
		}, verifier.NotEvaluated, verifier.CodeNoConsistency},
		{"proof hash flipped", func(b *testbundle.Bundle) {
			for n, f := range b.Files {
				if strings.HasPrefix(n, "log/consistency/") {
					p, _ := bundle.ParseConsistencyProof(f)
					p[len(p)-1][0] ^= 1
					b.Files[n] = bundle.MarshalConsistencyProof(p)
					break
				}
			}
		}, verifier.Broken, verifier.CodeLogProof},
		{"proof not base64", func(b *testbundle.Bundle) {
			for n := range b.Files {
				if strings.HasPrefix(n, "log/consistency/") {
					b.Files[n] = []byte("not a hash\n")
					break
				}
			}
		}, verifier.Broken, verifier.CodeLogProof},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := b.Clone()
			tc.tamper(c)
			c.Digests()
			rep := verify(t, c.Reader(t))
			one(t, rep, "log.consistency", tc.status, tc.code)
		})
	}
}

// TestLogSplitViewByProof: the log signs a second tree of the middle size whose root is not
// the prefix the proof to the latest tree implies: split view.
func TestLogSplitViewByProof(t *testing.T) {
	// Two fillers per seal: tree sizes 3, 6, 9, none a power of two (a proof from a
	// power-of-two size cannot imply another old root: the old root is its first node).
	b := testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{4, 8, 12}, CheckpointFiles: true, NoCheckpoint: true, Filler: 2})
	addLogProofs(t, b)
	var sizes []uint64
	for n := range b.Files {
		var s uint64
		if strings.HasPrefix(n, "log/checkpoints/") {
			fmtSscan(strings.TrimSuffix(strings.TrimPrefix(n, "log/checkpoints/"), ".checkpoint"), &s)
			sizes = append(sizes, s)
		}
	}
	small := sizes[0]
	for _, s := range sizes {
		small = min(small, s)
	}
	// Replace the smallest checkpoint by a log-signed one of the same size with another root.
	body := tlog.Checkpoint{Origin: b.Origin, Size: small, Hash: bytes.Repeat([]byte{7}, 32)}.Marshal()
	cp, err := note.Sign(&note.Note{Text: string(body)}, b.NoteSigner)
	if err != nil {
		t.Fatal(err)
	}
	b.Files[bundle.CheckpointFile(small)] = cp
	b.Digests()
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.Broken {
		t.Fatalf("verdict %s", rep.Verdict)
	}
	c := one(t, rep, "log.consistency", verifier.Broken, verifier.CodeInconsistent)
	if len(c.Evidence) != 2 || !strings.Contains(c.Evidence[0], ledger.RootString([32]byte(bytes.Repeat([]byte{7}, 32)))) {
		t.Errorf("evidence %q", c.Evidence)
	}
}

func TestChainConsistencyAndForks(t *testing.T) {
	const chain = "ws-1"
	b := testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{3, 7, 12}, ReceiptsAtEnd: true})
	addChainProofs(t, b, chain, []uint64{3, 7, 12})
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.Verified {
		t.Fatalf("verdict %s\n%s", rep.Verdict, text(t, rep))
	}
	c := one(t, rep, "chain.consistency", verifier.Verified, "")
	if !strings.Contains(c.Detail, "2 by chain consistency proofs") {
		t.Errorf("detail %q", c.Detail)
	}
	// Without the proofs the replay links the seals.
	nop := b.Clone()
	for n := range nop.Files {
		if strings.Contains(n, "/proofs/") {
			delete(nop.Files, n)
		}
	}
	nop.Digests()
	if c := one(t, verify(t, nop.Reader(t)), "chain.consistency", verifier.Verified, ""); !strings.Contains(c.Detail, "2 by the replayed entries") {
		t.Errorf("replay detail %q", c.Detail)
	}

	// A proof computed over another history of the chain (first leaf altered) that yields the
	// second seal's root only if the first seal's root were different: the service signed two
	// seals that are not one history.
	forked := b.Clone()
	leaves := testonly.New(rfc6962.DefaultHasher)
	var links [][]byte
	for _, l := range forked.Lines() {
		var e bundle.EntryLine
		json.Unmarshal(l, &e)
		links = append(links, append([]byte(nil), e.Link[:]...))
	}
	for _, l := range links {
		leaves.AppendData(l)
	}
	p, _ := leaves.ConsistencyProof(3, 7)
	// Make the proof's left part imply another old root: change the hash that stands for
	// leaf 2 (size 3 = subtrees [0,2) and [2,3)); the proof's first element is leaf 2's hash.
	p[0] = rfc6962.DefaultHasher.HashLeaf([]byte("another history"))
	// Recompute the root of size 7 this proof now yields and re-sign seal 1 over it is not
	// possible here (the seal names its own root), so check the opposite direction: the
	// verifier must report the pair as not linked, with both statements.
	rs, _ := receipts.SignRoot(forked.Issuer, receipts.Claims{Subject: chain}, leaves.HashAt(7))
	rc, _ := receipts.NewConsistencyReceipt(rs, receipts.ConsistencyProof{Size1: 3, Size2: 7, Path: p}, nil)
	forked.Files[bundle.ChainConsistencyFile(forked.Dir, 0, 1)] = rc
	forked.Digests()
	rep = verify(t, forked.Reader(t))
	c = one(t, rep, "chain.consistency", verifier.Broken, verifier.CodeChainProof)
	if len(c.Evidence) != 2 || !strings.Contains(c.Evidence[0], "seal 0 of size 3") || !strings.Contains(c.Evidence[1], "seal 1 of size 7") {
		t.Errorf("evidence %q", c.Evidence)
	}
}

// TestPostQuantumLogSignature: checkpoints signed Ed25519 + ML-DSA-44 verify under the pinned
// ML-DSA-44 key, with or without trust/log-mldsa.vkey in the bundle; --require-pq turns a
// missing signature or key into not_evaluated; an invalid ML-DSA-44 line is broken either way.
// The bundle's own key, unpinned, finds broken signatures but never makes one verified, and a
// bundle key other than the pinned one is broken.
func TestPostQuantumLogSignature(t *testing.T) {
	base := testbundle.Build(t, testbundle.Options{Entries: 8, SealAt: []int{4, 8}, NoCheckpoint: true, CheckpointFiles: true})
	addLogProofs(t, base)
	skey, vkey, err := fnote.GenerateMLDSAKey(base.Origin)
	if err != nil {
		t.Fatal(err)
	}
	pq, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	otherSKey, otherVKey, err := fnote.GenerateMLDSAKey(base.Origin)
	if err != nil {
		t.Fatal(err)
	}
	otherPQ, err := fnote.NewSignerForCosignatureV1(otherSKey)
	if err != nil {
		t.Fatal(err)
	}
	keyID := func(vkey string) string { return base.Origin + "+" + strings.Split(vkey, "+")[1] } // name+hash
	resign := func(b *testbundle.Bundle, signers ...note.Signer) {
		for n, f := range b.Files {
			if !strings.HasPrefix(n, "log/checkpoints/") {
				continue
			}
			text, _, _ := strings.Cut(string(f), "\n\n")
			cp, err := note.Sign(&note.Note{Text: text + "\n"}, signers...)
			if err != nil {
				t.Fatal(err)
			}
			b.Files[n] = cp
		}
		b.Digests()
	}
	signed := base.Clone()
	resign(signed, signed.NoteSigner, pq)
	signed.Files[bundle.LogPQKeyFile] = []byte(vkey + "\n")
	signed.Digests()

	signedNoKey := base.Clone()
	resign(signedNoKey, signedNoKey.NoteSigner, pq)

	// Signed by another ML-DSA-44 key of the log's name than the pinned one, with the bundle
	// naming no post-quantum key; and by the pinned key and that other one.
	otherSigned := base.Clone()
	resign(otherSigned, otherSigned.NoteSigner, otherPQ)
	bothSigned := base.Clone()
	resign(bothSigned, bothSigned.NoteSigner, pq, otherPQ)

	unsignedWithKey := base.Clone()
	unsignedWithKey.Files[bundle.LogPQKeyFile] = []byte(vkey + "\n")
	unsignedWithKey.Digests()

	badSig := signed.Clone()
	for n, f := range badSig.Files {
		if strings.HasPrefix(n, "log/checkpoints/") {
			// Flip one base64 character of the last signature line (the ML-DSA one is the longest).
			lines := strings.Split(strings.TrimSuffix(string(f), "\n"), "\n")
			longest := 0
			for i, l := range lines {
				if len(l) > len(lines[longest]) {
					longest = i
				}
			}
			l := []byte(lines[longest])
			l[len(l)-10] ^= 'A' ^ 'B'
			if l[len(l)-10] == '+' || l[len(l)-10] == '/' {
				l[len(l)-10] = 'C'
			}
			lines[longest] = string(l)
			badSig.Files[n] = []byte(strings.Join(lines, "\n") + "\n")
			break
		}
	}
	badSig.Digests()

	const (
		pinPQ      = "trust file pins the ML-DSA-44 key"
		pinPQByKey = "--log-key pins the ML-DSA-44 key"
		pinNoPQ    = "trust file pins no ML-DSA-44 key"
		pinOtherPQ = "trust file pins another ML-DSA-44 key"
		pinPQTwice = "trust file and --log-key pin the same ML-DSA-44 key"
	)
	options := func(pin string, require bool) verifier.Options {
		trust := testbundle.Trust(t)
		o := verifier.Options{RequirePQ: require, Now: func() time.Time { return testbundle.Base }, Trust: trust}
		switch pin {
		case pinPQ:
			trust.LogMLDSAKeys = []string{vkey} // the operator publishes the ML-DSA-44 key it signs with
		case pinPQByKey:
			o.TrustedLogKeys = []string{vkey}
		case pinOtherPQ:
			trust.LogMLDSAKeys = []string{otherVKey}
		case pinPQTwice:
			trust.LogMLDSAKeys = []string{vkey}
			o.TrustedLogKeys = append(slices.Clone(trust.LogKeys), vkey)
		}
		return o
	}
	type want struct {
		check  verifier.CheckName
		status verifier.Status
		code   verifier.Code
	}
	tests := []struct {
		name    string
		b       *testbundle.Bundle
		pin     string
		require bool
		verdict verifier.Status
		want    []want
	}{
		{"signed", signed, pinPQ, false, verifier.Verified, []want{{"trust.log_pq_key", verifier.Verified, ""}, {"log.pq_signature", verifier.Verified, ""}}},
		{"signed, required", signed, pinPQ, true, verifier.Verified, []want{{"log.pq_signature", verifier.Verified, ""}}},
		{"signed, no key in the bundle", signedNoKey, pinPQ, true, verifier.Verified, []want{{"trust.log_pq_key", verifier.Verified, ""}, {"log.pq_signature", verifier.Verified, ""}}},
		{"signed, no key in the bundle, pinned with --log-key", signedNoKey, pinPQByKey, true, verifier.Verified, []want{{"log.pq_signature", verifier.Verified, ""}}},
		{"signed, pinned twice", signed, pinPQTwice, true, verifier.Verified, []want{{"trust.log_pq_key", verifier.Verified, ""}, {"log.pq_signature", verifier.Verified, ""}}},
		{"signed, no key in the bundle, pinned twice", signedNoKey, pinPQTwice, true, verifier.Verified, []want{{"log.pq_signature", verifier.Verified, ""}}},
		{"no key in the bundle, pinned, required", base, pinPQ, true, verifier.NotEvaluated, []want{{"log.pq_signature", verifier.NotEvaluated, verifier.CodePQSigMissing}}},
		{"no key anywhere, required", base, pinNoPQ, true, verifier.NotEvaluated, []want{{"trust.log_pq_key", verifier.NotEvaluated, verifier.CodePQKeyMissing}}},
		{"no signature, not required", unsignedWithKey, pinPQ, false, verifier.NotEvaluated, []want{{"log.pq_signature", verifier.NotEvaluated, verifier.CodePQSigMissing}}},
		{"no signature, required", unsignedWithKey, pinPQ, true, verifier.NotEvaluated, []want{{"log.pq_signature", verifier.NotEvaluated, verifier.CodePQSigMissing}}},
		{"invalid signature", badSig, pinPQ, false, verifier.Broken, []want{{"log.pq_signature", verifier.Broken, verifier.CodePQSigInvalid}}},
		{"signed, not pinned", signed, pinNoPQ, false, verifier.NotEvaluated, []want{{"trust.log_pq_key", verifier.NotEvaluated, verifier.CodeTrustNotPinned}, {"log.pq_signature", verifier.NotEvaluated, verifier.CodeTrustNotPinned}}},
		{"signed, not pinned, required", signed, pinNoPQ, true, verifier.NotEvaluated, []want{{"log.pq_signature", verifier.NotEvaluated, verifier.CodeTrustNotPinned}}},
		{"invalid signature, not pinned", badSig, pinNoPQ, false, verifier.Broken, []want{{"log.pq_signature", verifier.Broken, verifier.CodePQSigInvalid}}},
		{"signed, another key pinned", signed, pinOtherPQ, false, verifier.Broken, []want{{"trust.log_pq_key", verifier.Broken, verifier.CodeTrustMismatch}, {"log.pq_signature", verifier.NotEvaluated, verifier.CodeTrustMismatch}}},
		{"signed, no key in the bundle, another key pinned", signedNoKey, pinOtherPQ, false, verifier.Broken, []want{{"trust.log_pq_key", verifier.Verified, ""}, {"log.pq_signature", verifier.Broken, verifier.CodeTrustMismatch}}},
		{"signed, no key in the bundle, another key pinned, required", signedNoKey, pinOtherPQ, true, verifier.Broken, []want{{"log.pq_signature", verifier.Broken, verifier.CodeTrustMismatch}}},
		{"signed by another key, none pinned", otherSigned, pinNoPQ, false, verifier.NotEvaluated, []want{{"log.pq_signature", verifier.NotEvaluated, verifier.CodeTrustNotPinned}}},
		{"signed by another key, pinned", otherSigned, pinPQ, false, verifier.Broken, []want{{"log.pq_signature", verifier.Broken, verifier.CodeTrustMismatch}}},
		{"signed by the pinned key and another", bothSigned, pinPQ, false, verifier.Broken, []want{{"log.pq_signature", verifier.Broken, verifier.CodeTrustMismatch}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := verifier.Verify(context.Background(), tc.b.Reader(t), options(tc.pin, tc.require))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s\n%s", rep.Verdict, tc.verdict, text(t, rep))
			}
			pqVerified := false
			for _, w := range tc.want {
				c := one(t, rep, w.check, w.status, w.code)
				pqVerified = pqVerified || (w.check == "log.pq_signature" && w.status == verifier.Verified)
				// A signature by an unpinned key names that key: the other one, or, when the
				// other one is pinned, the one the checkpoints were signed with.
				foreign := keyID(otherVKey)
				if tc.pin == pinOtherPQ {
					foreign = keyID(vkey)
				}
				if w.check == "log.pq_signature" && (w.code == verifier.CodeTrustMismatch && w.status == verifier.Broken || w.code == verifier.CodeTrustNotPinned && tc.b == otherSigned) &&
					!slices.ContainsFunc(c.Evidence, func(e string) bool { return strings.Contains(e, foreign) }) {
					t.Errorf("evidence %q names not the unpinned key %s", c.Evidence, foreign)
				}
			}
			for _, c := range checksNamed(rep, "log.pq_signature") {
				if c.Status == verifier.Verified && !pqVerified {
					t.Errorf("log.pq_signature verified: %s", c.Detail)
				}
			}
		})
	}
}
