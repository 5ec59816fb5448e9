package log

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

const testOrigin = "evident.test/log"

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openTestLog opens a log in logDir with keys in keyDir.
func openTestLog(t testing.TB, keyDir, logDir string, interval time.Duration) *Log {
	t.Helper()
	s, _, err := LoadOrCreateKey(keyDir, testOrigin)
	if err != nil {
		t.Fatalf("LoadOrCreateKey: %v", err)
	}
	l, err := Open(context.Background(), Options{
		Dir:                logDir,
		Signer:             s,
		CheckpointInterval: interval,
		BatchMaxAge:        20 * time.Millisecond,
		Logger:             quietLogger(),
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func closeLog(t testing.TB, l *Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func testEntry(tag string, i int) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := sha256.Sum256(append([]byte(tag), b[:]...))
	return h[:]
}

type appended struct {
	entry []byte
	index uint64
	cp    []byte
}

func appendConcurrently(t testing.TB, l *Log, tag string, n int) []appended {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make([]appended, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := testEntry(tag, i)
			idx, cp, err := l.Append(ctx, e)
			out[i], errs[i] = appended{e, idx, cp}, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
	}
	return out
}

func TestAppendConcurrentProofs(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, filepath.Join(dir, "keys"), filepath.Join(dir, "log"), 100*time.Millisecond)
	defer closeLog(t, l)
	ctx := context.Background()

	// 200 concurrent appends, in four waves of 50 so that several distinct
	// checkpoints get returned.
	const n = 200
	var res []appended
	for w := range 4 {
		res = append(res, appendConcurrently(t, l, fmt.Sprintf("concurrent-%d", w), n/4)...)
	}

	seen := make(map[uint64]bool)
	type cpInfo struct {
		size uint64
		root []byte
	}
	cps := map[uint64]cpInfo{}
	for i, r := range res {
		if seen[r.index] {
			t.Fatalf("index %d returned twice", r.index)
		}
		seen[r.index] = true
		cp, err := VerifyCheckpoint(r.cp, l.VerifierKey())
		if err != nil {
			t.Fatalf("entry %d: returned checkpoint does not verify: %v", i, err)
		}
		if cp.Origin != testOrigin {
			t.Fatalf("origin = %q", cp.Origin)
		}
		if cp.Size <= r.index {
			t.Fatalf("entry %d: checkpoint size %d does not cover index %d", i, cp.Size, r.index)
		}
		if prev, ok := cps[cp.Size]; ok && !bytes.Equal(prev.root, cp.Hash) {
			t.Fatalf("two roots for size %d", cp.Size)
		}
		cps[cp.Size] = cpInfo{cp.Size, cp.Hash}

		p, err := l.InclusionProof(ctx, r.index, cp.Size)
		if err != nil {
			t.Fatalf("InclusionProof(%d, %d): %v", r.index, cp.Size, err)
		}
		leaf := sha256.Sum256(append([]byte{0}, r.entry...))
		if !bytes.Equal(leaf[:], LeafHash(r.entry)) {
			t.Fatal("LeafHash is not SHA-256(0x00||entry)")
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, r.index, cp.Size, leaf[:], p, cp.Hash); err != nil {
			t.Fatalf("inclusion proof for %d at %d does not verify: %v", r.index, cp.Size, err)
		}
		got, err := l.Entry(ctx, r.index)
		if err != nil || !bytes.Equal(got, r.entry) {
			t.Fatalf("Entry(%d) = %x, %v; want %x", r.index, got, err, r.entry)
		}
	}
	for i := range uint64(n) {
		if !seen[i] {
			t.Fatalf("index %d never returned (indices must be 0..%d)", i, n-1)
		}
	}
	if len(cps) < 4 {
		t.Fatalf("only %d distinct checkpoint sizes, want >= 4", len(cps))
	}

	// Consistency between every pair of observed checkpoints (and the latest).
	latestRaw, err := l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := VerifyCheckpoint(latestRaw, l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	if latest.Size != n {
		t.Fatalf("latest size %d, want %d", latest.Size, n)
	}
	cps[latest.Size] = cpInfo{latest.Size, latest.Hash}
	sizes := slices.Sorted(func(yield func(uint64) bool) {
		for s := range cps {
			if !yield(s) {
				return
			}
		}
	})
	for i, a := range sizes {
		for _, b := range sizes[i:] {
			p, err := l.ConsistencyProof(ctx, a, b)
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", a, b, err)
			}
			if err := proof.VerifyConsistency(rfc6962.DefaultHasher, a, b, p, cps[a].root, cps[b].root); err != nil {
				t.Fatalf("consistency %d -> %d does not verify: %v", a, b, err)
			}
		}
	}
	// A tree size that was never an integration point still gets proofs.
	mid := sizes[0] + 1
	if mid < latest.Size {
		p, err := l.ConsistencyProof(ctx, mid, latest.Size)
		if err != nil {
			t.Fatalf("ConsistencyProof(%d, %d): %v", mid, latest.Size, err)
		}
		if len(p) == 0 {
			t.Fatal("empty consistency proof")
		}
	}

	// Beyond the published checkpoint is refused.
	if _, err := l.InclusionProof(ctx, 0, latest.Size+1); !errors.Is(err, ErrBeyondPublished) {
		t.Fatalf("InclusionProof beyond published: %v", err)
	}
	if _, err := l.Entry(ctx, latest.Size); !errors.Is(err, ErrBeyondPublished) {
		t.Fatalf("Entry beyond published: %v", err)
	}
}

func TestAppendDedup(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir+"/keys", dir+"/log", 100*time.Millisecond)
	defer closeLog(t, l)
	ctx := context.Background()

	e := testEntry("dup", 0)
	i1, _, err := l.Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Append(ctx, testEntry("dup", 1)); err != nil {
		t.Fatal(err)
	}
	i2, cp, err := l.Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if i1 != i2 {
		t.Fatalf("duplicate got index %d, earlier %d", i2, i1)
	}
	c, err := VerifyCheckpoint(cp, l.VerifierKey())
	if err != nil || c.Size != 2 {
		t.Fatalf("checkpoint after dup: %+v, %v (want size 2)", c, err)
	}

	// Concurrent duplicates collapse to one index as well.
	e2 := testEntry("dup", 2)
	var wg sync.WaitGroup
	idx := make([]uint64, 10)
	for i := range idx {
		wg.Go(func() {
			var err error
			if idx[i], _, err = l.Append(ctx, e2); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, x := range idx {
		if x != idx[0] {
			t.Fatalf("concurrent duplicates got different indices: %v", idx)
		}
	}
}

func TestAppendValidation(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir+"/keys", dir+"/log", 100*time.Millisecond)
	for _, n := range []int{0, 31, 33, 64} {
		if _, _, err := l.Append(context.Background(), make([]byte, n)); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("Append(%d bytes) = %v, want ErrInvalidEntry", n, err)
		}
	}
	closeLog(t, l)
	if _, _, err := l.Append(context.Background(), testEntry("x", 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	keyDir, logDir := filepath.Join(dir, "keys"), filepath.Join(dir, "log")
	l := openTestLog(t, keyDir, logDir, 100*time.Millisecond)
	vkey1 := l.VerifierKey()
	res := appendConcurrently(t, l, "reopen", 20)

	// A second Log on the same directory in this process is refused.
	s, _, err := LoadOrCreateKey(keyDir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), Options{Dir: logDir, Signer: s, Logger: quietLogger()}); err == nil {
		t.Fatal("second Open of an open directory succeeded")
	}
	closeLog(t, l)

	l2 := openTestLog(t, keyDir, logDir, 100*time.Millisecond)
	defer closeLog(t, l2)
	if l2.VerifierKey() != vkey1 {
		t.Fatalf("key not reused: %q vs %q", l2.VerifierKey(), vkey1)
	}
	ctx := context.Background()
	size, err := l2.Size(ctx)
	if err != nil || size != 20 {
		t.Fatalf("size after reopen = %d, %v; want 20", size, err)
	}
	for _, r := range res {
		got, err := l2.Entry(ctx, r.index)
		if err != nil || !bytes.Equal(got, r.entry) {
			t.Fatalf("Entry(%d) after reopen = %x, %v", r.index, got, err)
		}
	}
	idx, cp, err := l2.Append(ctx, testEntry("reopen", 1000))
	if err != nil || idx != 20 {
		t.Fatalf("Append after reopen = %d, %v; want index 20", idx, err)
	}
	c, err := VerifyCheckpoint(cp, vkey1)
	if err != nil || c.Size != 21 {
		t.Fatalf("checkpoint after reopen: %+v %v", c, err)
	}
	// The old checkpoint is consistent with the new one.
	old, _ := VerifyCheckpoint(res[0].cp, vkey1)
	p, err := l2.ConsistencyProof(ctx, old.Size, c.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old.Size, c.Size, p, old.Hash, c.Hash); err != nil {
		t.Fatalf("consistency across reopen: %v", err)
	}
}

func TestReopenRefusesWrongIdentity(t *testing.T) {
	dir := t.TempDir()
	keyDir, logDir := filepath.Join(dir, "keys"), filepath.Join(dir, "log")
	l := openTestLog(t, keyDir, logDir, 100*time.Millisecond)
	if _, _, err := l.Append(context.Background(), testEntry("id", 0)); err != nil {
		t.Fatal(err)
	}
	closeLog(t, l)

	// Wrong origin for the existing key directory.
	if _, _, err := LoadOrCreateKey(keyDir, "other.test/log"); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("LoadOrCreateKey with another origin = %v, want ErrKeyMismatch", err)
	}
	// A key with another origin on the existing log directory.
	s2, _, err := LoadOrCreateKey(filepath.Join(dir, "keys2"), "other.test/log")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), Options{Dir: logDir, Signer: s2, Logger: quietLogger()}); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Open with another origin = %v, want ErrKeyMismatch", err)
	}
	// Another key with the same origin.
	s3, _, err := LoadOrCreateKey(filepath.Join(dir, "keys3"), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), Options{Dir: logDir, Signer: s3, Logger: quietLogger()}); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Open with another key = %v, want ErrKeyMismatch", err)
	}
	// Rotation: new key primary, old key as additional signer, is accepted.
	sOld, _, err := LoadOrCreateKey(keyDir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l3, err := Open(context.Background(), Options{Dir: logDir, Signer: s3, AdditionalSigners: []note.Signer{sOld}, CheckpointInterval: 100 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Open with rotated key: %v", err)
	}
	closeLog(t, l3)
}

func TestAppendContextCancel(t *testing.T) {
	dir := t.TempDir()
	// A long interval: the first checkpoint (size 0) is published at Open, so
	// the next one is ~1s away and Append has to wait.
	l := openTestLog(t, dir+"/keys", dir+"/log", time.Second)
	defer closeLog(t, l)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := l.Append(ctx, testEntry("cancel", 0))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Append returned %v after cancellation", d)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, _, err := l.Append(cctx, testEntry("cancel", 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with cancelled ctx = %v", err)
	}
}

func TestPushback(t *testing.T) {
	dir := t.TempDir()
	s, _, err := LoadOrCreateKey(dir+"/keys", testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(context.Background(), Options{
		Dir: dir + "/log", Signer: s, CheckpointInterval: 300 * time.Millisecond,
		PushbackMaxOutstanding: 1, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog(t, l)
	first := make(chan error, 1)
	go func() {
		_, _, err := l.Append(context.Background(), testEntry("pb", 0))
		first <- err
	}()
	deadline := time.Now().Add(2 * time.Second)
	for l.outstanding.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if _, _, err := l.Append(context.Background(), testEntry("pb", 1)); !errors.Is(err, ErrPushback) {
		t.Fatalf("second Append = %v, want ErrPushback", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first Append: %v", err)
	}
	if _, _, err := l.Append(context.Background(), testEntry("pb", 2)); err != nil {
		t.Fatalf("Append after pushback cleared: %v", err)
	}
}

func TestOpenValidation(t *testing.T) {
	dir := t.TempDir()
	s, vkey, err := LoadOrCreateKey(dir+"/keys", testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	_, otherV, _ := GenerateKey(testOrigin)
	for name, o := range map[string]Options{
		"no dir":        {Signer: s},
		"no signer":     {Dir: dir + "/log"},
		"interval":      {Dir: dir + "/log", Signer: s, CheckpointInterval: 10 * time.Millisecond},
		"wrong vkey":    {Dir: dir + "/log", Signer: s, VerifierKey: otherV},
		"garbage vkey":  {Dir: dir + "/log", Signer: s, VerifierKey: "nope"},
		"plain signer":  {Dir: dir + "/log", Signer: plainSigner(t)},
		"bad addl name": {Dir: dir + "/log", Signer: s, AdditionalSigners: []note.Signer{plainSigner(t)}},
	} {
		o.Logger = quietLogger()
		if l, err := Open(context.Background(), o); err == nil {
			closeLog(t, l)
			t.Errorf("%s: Open succeeded", name)
		}
	}
	// An explicit, matching VerifierKey works with a plain note signer.
	skey, err := os.ReadFile(filepath.Join(dir, "keys", KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	ps := mustNoteSigner(t, string(bytes.TrimSpace(skey)))
	l, err := Open(context.Background(), Options{Dir: dir + "/log", Signer: ps, VerifierKey: vkey, CheckpointInterval: 100 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Open with explicit VerifierKey: %v", err)
	}
	closeLog(t, l)
}

// crash abandons l without Close: no Tessera shutdown, background work just
// stops, as if the process had been killed.
func crash(l *Log) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.bgCancel()
	openDirsMu.Lock()
	delete(openDirs, l.dirKey)
	openDirsMu.Unlock()
}

func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	keyDir, logDir := filepath.Join(dir, "keys"), filepath.Join(dir, "log")
	l := openTestLog(t, keyDir, logDir, 100*time.Millisecond)
	res := appendConcurrently(t, l, "crash", 30)
	crash(l)

	l2 := openTestLog(t, keyDir, logDir, 100*time.Millisecond)
	defer closeLog(t, l2)
	ctx := context.Background()
	size, err := l2.Size(ctx)
	if err != nil || size < 30 {
		t.Fatalf("size after crash = %d, %v; want >= 30", size, err)
	}
	for _, r := range res {
		got, err := l2.Entry(ctx, r.index)
		if err != nil || !bytes.Equal(got, r.entry) {
			t.Fatalf("acknowledged entry %d lost: %x, %v", r.index, got, err)
		}
		cp, _ := VerifyCheckpoint(r.cp, l2.VerifierKey())
		p, err := l2.InclusionProof(ctx, r.index, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, r.index, cp.Size, LeafHash(r.entry), p, cp.Hash); err != nil {
			t.Fatalf("proof after crash: %v", err)
		}
	}
	if idx, _, err := l2.Append(ctx, testEntry("crash", 99)); err != nil || idx != 30 {
		t.Fatalf("Append after crash = %d, %v; want 30", idx, err)
	}
}
