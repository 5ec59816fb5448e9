package scitt

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		password []byte
	}{{"plain", nil}, {"encrypted", []byte("correct horse battery staple")}} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".key")
			k1, err := LoadOrCreateKey(p, tc.password)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := os.Stat(p)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", st.Mode().Perm())
			}
			k2, err := LoadOrCreateKey(p, tc.password)
			if err != nil {
				t.Fatal(err)
			}
			if !k1.Public().(ed25519.PublicKey).Equal(k2.Public()) {
				t.Fatal("the key changed on reload")
			}
			raw, _ := os.ReadFile(p)
			if tc.password != nil {
				if !strings.Contains(string(raw), "ENCRYPTED SIGSTORE PRIVATE KEY") {
					t.Fatalf("not encrypted: %s", raw)
				}
				if _, err := LoadOrCreateKey(p, []byte("wrong")); err == nil {
					t.Fatal("wrong password accepted")
				}
			}
		})
	}
	// An operator-provided P-256 key is used as is.
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pemBytes, _ := cryptoutils.MarshalPrivateKeyToPEM(ec)
	p := filepath.Join(dir, "ec.pem")
	os.WriteFile(p, pemBytes, 0o600)
	k, err := LoadOrCreateKey(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ec.PublicKey.Equal(k.Public()) {
		t.Fatal("P-256 key not loaded")
	}
	os.WriteFile(filepath.Join(dir, "junk.pem"), []byte("not a key"), 0o600)
	if _, err := LoadOrCreateKey(filepath.Join(dir, "junk.pem"), nil); err == nil {
		t.Fatal("junk accepted")
	}
}

// openService opens a real Tessera log in a temporary directory (closed when the test ends)
// and a Service on it with a new Ed25519 key; it returns the log, the service, the key and the
// log's verifier key.
func openService(t *testing.T) (*log.Log, *Service, ed25519.PrivateKey, string) {
	t.Helper()
	dir := t.TempDir()
	signer, vkey, err := log.LoadOrCreateKey(dir, "test.example/log")
	if err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(context.Background(), log.Options{Dir: filepath.Join(dir, "log"), Signer: signer, CheckpointInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	svc, err := New(l, priv, "evident:test", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l, svc, priv, vkey
}

// TestSealRegisterReceipt registers seal statements in a real Tessera log and checks that
// every receipt verifies against the service key and the checkpoint's root.
func TestSealRegisterReceipt(t *testing.T) {
	_, svc, priv, vkey := openService(t)
	for i := range 3 {
		seal := ledger.Seal{Chain: "wsp", Profile: "chap/0.3", Size: uint64(i + 1), Head: ledger.NextLink([]byte{byte(i)}, ledger.Genesis),
			Root: ledger.RootString([32]byte{byte(i)}), SealedAt: ledger.Timestamp(time.Now())}
		stmt, entry, err := svc.IssueSeal(seal)
		if err != nil {
			t.Fatal(err)
		}
		got, err := svc.SealOf(stmt)
		if err != nil || got != seal {
			t.Fatalf("SealOf: %+v %v", got, err)
		}
		idx, cp, rcpt, err := svc.Register(context.Background(), stmt)
		if err != nil {
			t.Fatal(err)
		}
		c, err := log.VerifyCheckpoint(cp, vkey)
		if err != nil {
			t.Fatal(err)
		}
		leaf := receipts.LeafHash(entry[:])
		root, r, err := receipts.VerifyInclusion(rcpt, leaf[:], priv.Public())
		if err != nil {
			t.Fatal(err)
		}
		if string(root) != string(c.Hash) || r.Inclusion[0].LeafIndex != idx || r.Claims.Subject != "test.example/log" || string(r.Checkpoint) != string(cp) {
			t.Fatalf("receipt %d does not match its checkpoint", i)
		}
		ts, err := svc.Transparent(stmt, rcpt)
		if err != nil {
			t.Fatal(err)
		}
		if _, rs, err := receipts.SplitTransparent(ts); err != nil || len(rs) != 1 {
			t.Fatalf("transparent: %v", err)
		}
	}
}

// TestGenesisNoEmptyPath: the service never cuts a receipt from a one-leaf tree (its
// inclusion path would be empty, which RFC 9942 does not allow). A new log gets the genesis
// entry first; a log that already holds one entry (made before the rule) is grown by it
// when that entry is registered again.
func TestGenesisNoEmptyPath(t *testing.T) {
	open := func(t *testing.T) (*log.Log, *Service, ed25519.PrivateKey) {
		l, svc, priv, _ := openService(t)
		return l, svc, priv
	}
	seal := ledger.Seal{Chain: "wsp", Profile: "chap/0.3", Size: 1, Head: ledger.NextLink([]byte{1}, ledger.Genesis),
		Root: ledger.RootString([32]byte{1}), SealedAt: ledger.Timestamp(time.Now())}
	check := func(t *testing.T, svc *Service, pub ed25519.PublicKey, stmt []byte, wantIdx uint64) {
		t.Helper()
		idx, _, rcpt, err := svc.Register(context.Background(), stmt)
		if err != nil || idx != wantIdx {
			t.Fatalf("register: index %d, %v; want %d", idx, err, wantIdx)
		}
		entry, _ := receipts.EntryHash(stmt)
		leaf := receipts.LeafHash(entry[:])
		_, r, err := receipts.VerifyInclusion(rcpt, leaf[:], pub)
		if err != nil || r.Inclusion[0].TreeSize < 2 || len(r.Inclusion[0].Path) == 0 {
			t.Fatalf("receipt %+v, %v: want a non-empty path", r, err)
		}
	}

	t.Run("new log", func(t *testing.T) {
		l, svc, priv := open(t)
		stmt, _, err := svc.IssueSeal(seal)
		if err != nil {
			t.Fatal(err)
		}
		check(t, svc, priv.Public().(ed25519.PublicKey), stmt, 1)
		e0, err := l.Entry(context.Background(), 0)
		if g := GenesisEntry("test.example/log"); err != nil || string(e0) != string(g[:]) {
			t.Fatalf("entry 0 %x, %v; want the genesis entry", e0, err)
		}
	})
	t.Run("one-leaf log from before", func(t *testing.T) {
		l, svc, priv := open(t)
		stmt, entry, err := svc.IssueSeal(seal)
		if err != nil {
			t.Fatal(err)
		}
		idx, cp, err := l.Append(context.Background(), entry[:]) // as the service did before the rule
		if err != nil || idx != 0 {
			t.Fatal(idx, err)
		}
		if rc, err := svc.Receipt(context.Background(), 0, cp); !errors.Is(err, ErrOneLeafTree) || !errors.Is(err, receipts.ErrEmptyPath) || rc != nil {
			t.Fatalf("receipt from a one-leaf checkpoint: %v, want ErrOneLeafTree", err)
		}
		check(t, svc, priv.Public().(ed25519.PublicKey), stmt, 0)
	})
}

// TestRootSignatureCacheBounded: the receipt signatures kept per tree size stay at most
// keptRootSigs, whether the sizes asked for grow (new checkpoints) or shrink (receipts of
// old registrations re-signed after a key rotation), and a kept signature is reused.
func TestRootSignatureCacheBounded(t *testing.T) {
	_, svc, _, _ := openService(t)
	for _, tc := range []struct {
		name  string
		sizes func(i int) uint64
	}{
		{"growing", func(i int) uint64 { return uint64(2 + i) }},
		{"shrinking", func(i int) uint64 { return uint64(1000 - i) }},
		{"alternating", func(i int) uint64 { return uint64(500 + (i%2)*1000 - i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 100 {
				size := tc.sizes(i)
				root := make([]byte, 32)
				root[0] = byte(size)
				a, err := svc.rootSignature(size, root)
				if err != nil {
					t.Fatal(err)
				}
				b, err := svc.rootSignature(size, root)
				if err != nil || !bytes.Equal(a.Signature, b.Signature) {
					t.Fatalf("size %d: the kept signature was not reused (%v)", size, err)
				}
				svc.mu.Lock()
				n := len(svc.rootSigs)
				svc.mu.Unlock()
				if n > keptRootSigs {
					t.Fatalf("after size %d: %d signatures kept, want at most %d", size, n, keptRootSigs)
				}
			}
		})
	}
}
