package misbehaviour_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	tlog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/log"
)

// testLog is a log key (Ed25519, and ML-DSA-44 when made by newLog) and the trees it signed
// checkpoints of: one tree per history, named by a tag. Two histories of one log are a fork.
type testLog struct {
	origin  string
	signers []note.Signer
	ed, pq  string // verifier keys
	trees   map[string]*testonly.Tree
}

// newLog makes a log that signs every checkpoint with a fresh Ed25519 key and a fresh
// ML-DSA-44 key, as evidentd does with --log-mldsa.
func newLog(t testing.TB, origin string) *testLog {
	t.Helper()
	l := newEd25519Log(t, origin, rand.Reader)
	skey, _, err := log.GenerateMLDSAKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	s, vkey, err := log.NewMLDSASigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	l.signers, l.pq = append(l.signers, s), vkey
	return l
}

// newEd25519Log makes a log with an Ed25519 key drawn from entropy (a fixed reader gives a
// fixed key, for golden files and fuzz corpora).
func newEd25519Log(t testing.TB, origin string, entropy interface{ Read([]byte) (int, error) }) *testLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(entropy, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{origin: origin, signers: []note.Signer{s}, ed: vkey, trees: map[string]*testonly.Tree{}}
}

// fixedEntropy returns a reader of 32 bytes derived from label: the same key every run.
func fixedEntropy(label string) *bytes.Reader {
	seed := sha256.Sum256([]byte(label))
	return bytes.NewReader(seed[:])
}

// grow appends leaves to history tag until it holds size leaves. A history started with
// from copies the first shared leaves of history from, so the two agree up to there.
func (l *testLog) grow(tag string, size uint64, from string, shared uint64) *testonly.Tree {
	tr, ok := l.trees[tag]
	if !ok {
		tr = testonly.New(rfc6962.DefaultHasher)
		for i := uint64(0); i < shared; i++ {
			tr.Append(l.trees[from].LeafHash(i))
		}
		l.trees[tag] = tr
	}
	for tr.Size() < size {
		tr.AppendData([]byte(fmt.Sprintf("%s/%d", tag, tr.Size())))
	}
	return tr
}

// root returns history tag's root at size.
func (l *testLog) root(tag string, size uint64) []byte { return l.trees[tag].HashAt(size) }

// checkpoint signs history tag's checkpoint of size with every log key, then with extra
// signers (witnesses' cosignatures).
func (l *testLog) checkpoint(t testing.TB, tag string, size uint64, extra ...note.Signer) []byte {
	t.Helper()
	cp := tlog.Checkpoint{Origin: l.origin, Size: size, Hash: l.root(tag, size)}
	b, err := note.Sign(&note.Note{Text: string(cp.Marshal())}, append(append([]note.Signer{}, l.signers...), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// proof returns history tag's consistency proof from size1 to size2.
func (l *testLog) proof(t testing.TB, tag string, size1, size2 uint64) [][]byte {
	t.Helper()
	p, err := l.trees[tag].ConsistencyProof(size1, size2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newWitness makes a witness's Ed25519 cosignature/v1 signer and verifier key.
func newWitness(t testing.TB, name string) (note.Signer, string) {
	t.Helper()
	sk, vk, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := fnote.VKeyToCosignatureV1(vk)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fnote.NewSignerForCosignatureV1(sk)
	if err != nil {
		t.Fatal(err)
	}
	return s, cv
}

// randomHashes returns n random 32-byte hashes.
func randomHashes(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 32)
		rand.Read(out[i])
	}
	return out
}

// collidingKeys returns two different Ed25519 vkeys named name with one key hash: the hash
// is 32 bits, so a birthday search over public keys derived from a counter finds a pair in
// about 2^16 tries (anyone can make such a pair; a verifier must not be confused by one).
func collidingKeys(t testing.TB, name string) (string, string) {
	t.Helper()
	seen := map[uint32]string{}
	for i := 0; i < 1<<20; i++ {
		pub := sha256.Sum256(fmt.Appendf(nil, "colliding key %d", i))
		vkey, err := note.NewEd25519VerifierKey(name, pub[:])
		if err != nil {
			t.Fatal(err)
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[v.KeyHash()]; ok {
			return prev, vkey
		}
		seen[v.KeyHash()] = vkey
	}
	t.Fatal("no two keys with one hash")
	return "", ""
}

// junkLine returns a signature line that names the key vkey (its name and key hash) and
// carries a signature that does not verify: anyone can append one to a note.
func junkLine(t testing.TB, vkey string) string {
	t.Helper()
	name, rest, _ := strings.Cut(vkey, "+")
	hash, _, _ := strings.Cut(rest, "+")
	h, err := hex.DecodeString(hash)
	if err != nil {
		t.Fatal(err)
	}
	return "— " + name + " " + base64.StdEncoding.EncodeToString(append(h, bytes.Repeat([]byte{0x5a}, 64)...)) + "\n"
}

// withLine inserts a signature line into a checkpoint note, as its first signature line
// (first) or its last.
func withLine(n, line string, first bool) string {
	if first {
		text, sigs, _ := strings.Cut(n, "\n\n")
		return text + "\n\n" + line + sigs
	}
	return n + line
}
