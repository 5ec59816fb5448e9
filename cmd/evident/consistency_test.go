package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/receipts"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestReceiptVerifyConsistency: a consistency receipt (396 {-2}) between sizes 3 and 7 of
// a real RFC 6962 tree verifies given the two roots or the two signed checkpoints, and is
// refused against the wrong root, the wrong checkpoint, a checkpoint signed by another
// key or with the wrong service key.
func TestReceiptVerifyConsistency(t *testing.T) {
	tree := testonly.New(rfc6962.DefaultHasher)
	for i := range 9 {
		tree.AppendData([]byte(fmt.Sprintf("entry %d", i)))
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := receipts.NewSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	const origin = "example.org/log"
	path, err := tree.ConsistencyProof(3, 7)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := receipts.SignRoot(signer, receipts.Claims{Issuer: "https://ts.example", Subject: origin, IssuedAt: 1}, tree.HashAt(7))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := receipts.NewConsistencyReceipt(rs, receipts.ConsistencyProof{Size1: 3, Size2: 7, Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := writeTemp(t, "ts.pem", pemPublic(t, k.Public()))
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherPEM := writeTemp(t, "other.pem", pemPublic(t, other.Public()))
	rcPath := writeTemp(t, "cons.cose", rc)

	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	skey2, _, _ := note.GenerateKey(rand.Reader, origin)
	checkpoint := func(sk string, size uint64) string {
		ns, err := note.NewSigner(sk)
		if err != nil {
			t.Fatal(err)
		}
		body := tlog.Checkpoint{Origin: origin, Size: size, Hash: tree.HashAt(size)}.Marshal()
		b, err := note.Sign(&note.Note{Text: string(body)}, ns)
		if err != nil {
			t.Fatal(err)
		}
		return writeTemp(t, fmt.Sprintf("cp%d-%p", size, &b), b)
	}
	vkeyPath := writeTemp(t, "log.vkey", []byte(vkey+"\n"))
	trust := testTrustFile(t, origin, []string{vkey}, nil, "")
	root := func(n uint64) string { return hex.EncodeToString(tree.HashAt(n)) }
	base := []string{"receipt", "verify", "--consistency", rcPath}

	for _, tc := range []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"roots", []string{"--key", pubPEM, "--old-root", root(3), "--new-root", "sha256:" + root(7)}, exitVerified, "tree size 3 → 7"},
		{"checkpoints", []string{"--key", pubPEM, "--log-key", vkeyPath, "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 7)}, exitVerified, "VERDICT: VERIFIED"},
		{"checkpoints, the vkey itself", []string{"--key", pubPEM, "--log-key", vkey, "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 7)}, exitVerified, "VERDICT: VERIFIED"},
		{"checkpoints, a trust file as the log key", []string{"--key", pubPEM, "--log-key", trust, "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 7)}, exitVerified, "VERDICT: VERIFIED"},
		{"checkpoints, a malformed log key", []string{"--key", pubPEM, "--log-key", "nope", "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 7)}, exitUsage, ""},
		{"wrong old root", []string{"--key", pubPEM, "--old-root", root(4), "--new-root", root(7)}, exitBroken, "BROKEN"},
		{"wrong new root", []string{"--key", pubPEM, "--old-root", root(3), "--new-root", root(8)}, exitBroken, "BROKEN"},
		{"old checkpoint of another size", []string{"--key", pubPEM, "--log-key", vkeyPath, "--old-checkpoint", checkpoint(skey, 2), "--new-checkpoint", checkpoint(skey, 7)}, exitBroken, "starts at tree size 3"},
		{"new checkpoint of another size", []string{"--key", pubPEM, "--log-key", vkeyPath, "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 9)}, exitBroken, "ends at tree size 7"},
		{"checkpoint signed by another key", []string{"--key", pubPEM, "--log-key", vkeyPath, "--old-checkpoint", checkpoint(skey2, 3), "--new-checkpoint", checkpoint(skey, 7)}, exitBroken, "old checkpoint: BROKEN"},
		{"wrong service key", []string{"--key", otherPEM, "--old-root", root(3), "--new-root", root(7)}, exitBroken, "BROKEN"},
		{"checkpoints without log key", []string{"--key", pubPEM, "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 7)}, exitUsage, ""},
		{"only one end", []string{"--key", pubPEM, "--old-root", root(3)}, exitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(append(append([]string(nil), base...), tc.args...)...)
			if code != tc.want || !strings.Contains(out, tc.out) {
				t.Fatalf("exit %d (want %d)\n%s%s", code, tc.want, out, errs)
			}
		})
	}
	// The same in JSON: one object, the verdict and the consistency receipt's result.
	for _, tc := range []struct {
		name, verdict string
		code          int
		args          []string
	}{
		{"verified", "verified", exitVerified, []string{"--key", pubPEM, "--log-key", vkeyPath, "--old-checkpoint", checkpoint(skey, 3), "--new-checkpoint", checkpoint(skey, 7)}},
		{"broken", "broken", exitBroken, []string{"--key", pubPEM, "--old-root", root(3), "--new-root", root(8)}},
	} {
		t.Run("json "+tc.name, func(t *testing.T) {
			m := decode(t, tc.code, append(append(append([]string(nil), base...), tc.args...), "--format", "json")...)
			c, _ := m["consistency"].(map[string]any)
			if m["verdict"] != tc.verdict || c["verdict"] != tc.verdict || (tc.code == 0) != (c["error"] == nil) || (tc.code == 0 && !strings.Contains(c["detail"].(string), "tree size 3 → 7")) {
				t.Fatalf("%v", m)
			}
		})
	}
	// An inclusion receipt is not a consistency receipt.
	ipath, _ := tree.InclusionProof(1, 7)
	ir, _ := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: 7, LeafIndex: 1, Path: ipath}, nil)
	code, out, _ := cli("receipt", "verify", "--consistency", writeTemp(t, "incl.cose", ir), "--key", pubPEM, "--old-root", root(3), "--new-root", root(7))
	if code != exitBroken || !strings.Contains(out, "not a consistency receipt") {
		t.Fatalf("inclusion receipt as consistency: exit %d\n%s", code, out)
	}
}

func pemPublic(t *testing.T, pub any) []byte {
	t.Helper()
	b, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
