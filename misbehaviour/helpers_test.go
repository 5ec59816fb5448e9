package misbehaviour_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"testing"

	tlog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/tilelog"
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
	skey, _, err := tilelog.GenerateMLDSAKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	s, vkey, err := tilelog.NewMLDSASigner(skey)
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
