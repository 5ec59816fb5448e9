package misbehaviour_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/misbehaviour"
)

// TestWriteFile: a proof is written under its origin's and sizes' name; the same bytes reuse
// the file, other bytes under a taken name get a suffix, and no file is written over.
func TestWriteFile(t *testing.T) {
	l := forkedLog(t)
	p := mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), nil)
	dir := t.TempDir()
	id := sha256.Sum256([]byte(l.origin))
	want := filepath.Join(dir, "misbehaviour-"+hex.EncodeToString(id[:])[:12]+"-7-7.json")
	path, err := misbehaviour.WriteFile(dir, p)
	if err != nil || path != want {
		t.Fatalf("WriteFile: %q, %v; want %q", path, err, want)
	}
	if again, err := misbehaviour.WriteFile(dir, p); err != nil || again != want {
		t.Fatalf("same proof again: %q, %v", again, err)
	}
	q := mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), nil)
	q.Observer = "another"
	second, err := misbehaviour.WriteFile(dir, q)
	if err != nil || second != strings.TrimSuffix(want, ".json")+"-2.json" {
		t.Fatalf("other bytes: %q, %v", second, err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if pb, _ := p.Marshal(); !bytes.Equal(b, pb) {
		t.Fatal("the first file was written over")
	}
}

// TestParseSome: an empty list is no proof; a list of one is one.
func TestParseSome(t *testing.T) {
	if _, err := misbehaviour.ParseSome([]byte("[]")); !errors.Is(err, misbehaviour.ErrNoProof) || !strings.HasSuffix(err.Error(), ": an empty list") {
		t.Fatalf("empty list: %v", err)
	}
	l := forkedLog(t)
	b, err := mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), nil).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := misbehaviour.ParseSome(append(append([]byte("["), b...), ']')); err != nil || len(ps) != 1 {
		t.Fatalf("list of one: %d, %v", len(ps), err)
	}
}

// TestClaimOf: a note's size, root and signature line names are read without checking a
// signature; a note that is not a checkpoint is ErrFormat.
func TestClaimOf(t *testing.T) {
	l := forkedLog(t)
	c, err := misbehaviour.ClaimOf(string(l.checkpoint(t, "a", 7)))
	if err != nil || c.Size != 7 || !bytes.Equal(c.Root, l.root("a", 7)) || len(c.Signers) != 1 || c.Signers[0] != l.origin {
		t.Fatalf("ClaimOf: %+v, %v", c, err)
	}
	if !strings.HasPrefix(c.String(), "tree size 7, root ") || !strings.HasSuffix(c.String(), ", signature lines by "+l.origin) {
		t.Fatalf("String: %q", c)
	}
	if _, err := misbehaviour.ClaimOf("not a checkpoint\n\n— x y\n"); !errors.Is(err, misbehaviour.ErrFormat) {
		t.Fatalf("not a checkpoint: %v", err)
	}
}

// TestKeyType: a signer named by a pinned ML-DSA-44 key is of that type, any other Ed25519.
func TestKeyType(t *testing.T) {
	l := forkedLog(t)
	k := misbehaviour.Keys{LogKeys: []string{l.ed, l.pq}}
	res := misbehaviour.Check(mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), nil), misbehaviour.Keys{LogKeys: []string{l.pq}})
	if !res.Proven {
		t.Fatalf("not proven: %s", res.Reason)
	}
	if got := k.KeyType(res.Sides[0].Signer); got != misbehaviour.KeyTypeMLDSA44 {
		t.Errorf("ML-DSA-44 signer: %s", got)
	}
	res = misbehaviour.Check(mustNew(t, l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), nil), misbehaviour.Keys{LogKeys: []string{l.ed}})
	if got := k.KeyType(res.Sides[0].Signer); got != misbehaviour.KeyTypeEd25519 {
		t.Errorf("Ed25519 signer: %s", got)
	}
}

// FuzzClaimOf: any text is read as a claim or refused with ErrFormat, never a panic; a claim
// names each signer once.
func FuzzClaimOf(f *testing.F) {
	f.Add("example.org/log\n4\nqUpJ6LpStB5hCdUZ8sbUXp/G6tuG3Lno9hpd0fGfjRw=\n\n— example.org/log AbCdEf==\n— w1 xyz=\n— w1 xyz=\n")
	f.Add("")
	f.Add("a\n\n\n")
	f.Fuzz(func(t *testing.T, n string) {
		c, err := misbehaviour.ClaimOf(n)
		if err != nil {
			if !errors.Is(err, misbehaviour.ErrFormat) {
				t.Fatalf("%v does not match ErrFormat", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range c.Signers {
			if seen[s] {
				t.Fatalf("signer %q twice", s)
			}
			seen[s] = true
		}
	})
}
