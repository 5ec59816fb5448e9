package export

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/verifier"
)

// fixture is a real service: a Tessera log in a temporary directory, a SQLite store, the
// ingest pipeline sealing into the log, and an Exporter over them.
type fixture struct {
	store    store.Store
	svc      *scitt.Service
	pipeline *ingest.Pipeline
	x        *Exporter
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := testinfra.TempDir(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	signer, _, err := log.LoadOrCreateKey(filepath.Join(dir, "keys"), "example.com/export-test")
	if err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(ctx, log.Options{Dir: filepath.Join(dir, "log"), Signer: signer, CheckpointInterval: 100 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	st, err := embedded.Open(ctx, filepath.Join(dir, embedded.Dir), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := scitt.LoadOrCreateKey(filepath.Join(dir, "keys", "service.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := scitt.New(l, key, "evident:export-test", scitt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ingest.New(ingest.Options{Store: st, Profiles: profile.All(), Sealer: svc, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: st, svc: svc, pipeline: p,
		x: New(Config{Pipeline: p, Store: st, Service: svc, Producer: "export-test"})}
}

// records returns n signed CHAP envelopes of chain.
func records(t testing.TB, chain string, n int) [][]byte {
	t.Helper()
	var out [][]byte
	_, err := chapscenario.Long(chain, n, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC), func(b []byte) error {
		out = append(out, bytes.Clone(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fixture) ingest(t testing.TB, chain string, recs [][]byte) {
	t.Helper()
	if _, err := f.pipeline.Ingest(context.Background(), chain, chap.Profile, recs); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) seal(t testing.TB, chain string) *ingest.SealResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.pipeline.Seal(ctx, chain, false)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rootAt is the chain tree root of the first n stored links, computed with ledger.Tree.
func (f *fixture) rootAt(t *testing.T, chain string, n uint64) [32]byte {
	t.Helper()
	es, err := f.store.Entries(context.Background(), chain, store.Filter{Limit: int(n)})
	if err != nil {
		t.Fatal(err)
	}
	tr := ledger.NewTree()
	for _, e := range es[:n] {
		tr.Append(e.Link)
	}
	return tr.Root()
}

func TestLinksYieldsStoredLinksInOrder(t *testing.T) {
	f := newFixture(t)
	const chain = "wsp_links"
	f.ingest(t, chain, records(t, chain, 12))
	es, err := f.store.Entries(context.Background(), chain, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []ledger.Link
	for l, err := range links(context.Background(), f.store, chain) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != len(es) {
		t.Fatalf("%d links, %d entries", len(got), len(es))
	}
	for i, e := range es {
		if got[i] != e.Link {
			t.Errorf("link %d = %s, entry says %s", i, got[i], e.Link)
		}
	}
	n := 0
	for range links(context.Background(), f.store, chain) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("stopped after %d links, want 3", n)
	}
}

func TestChainConsistencyReceipt(t *testing.T) {
	f := newFixture(t)
	const chain = "wsp_consistency"
	f.ingest(t, chain, records(t, chain, 37))
	pub := f.svc.Signer().Public()
	for _, tc := range []struct{ from, to uint64 }{
		{1, 2}, {3, 7}, {4, 8}, {5, 16}, {16, 17}, {17, 32}, {31, 37}, {36, 37}, {1, 37},
	} {
		rc, err := f.x.ChainConsistencyReceipt(context.Background(), chain, tc.from, tc.to)
		if err != nil {
			t.Fatalf("%d-%d: %v", tc.from, tc.to, err)
		}
		old := f.rootAt(t, chain, tc.from)
		newRoot, r, err := receipts.VerifyConsistency(rc, old[:], pub)
		if err != nil {
			t.Fatalf("%d-%d: %v", tc.from, tc.to, err)
		}
		if want := f.rootAt(t, chain, tc.to); !bytes.Equal(newRoot, want[:]) {
			t.Errorf("%d-%d: receipt root %x, chain root %x", tc.from, tc.to, newRoot, want)
		}
		if r.Claims.Subject != chain || r.Consistency[0].Size1 != tc.from || r.Consistency[0].Size2 != tc.to {
			t.Errorf("%d-%d: receipt claims %+v, proof %d-%d", tc.from, tc.to, r.Claims, r.Consistency[0].Size1, r.Consistency[0].Size2)
		}
	}
	// Equal sizes have an empty path, which RFC 9942 does not allow: refused, typed.
	for _, n := range []uint64{1, 8, 37} {
		if rc, err := f.x.ChainConsistencyReceipt(context.Background(), chain, n, n); !errors.Is(err, receipts.ErrEmptyPath) || rc != nil {
			t.Errorf("%d-%d: %v, want receipts.ErrEmptyPath", n, n, err)
		}
	}
	if _, err := f.x.ChainConsistencyReceipt(context.Background(), chain, 3, 38); !errors.Is(err, ledger.ErrShortChain) {
		t.Errorf("beyond the chain: %v, want ledger.ErrShortChain", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.x.ChainConsistencyReceipt(ctx, chain, 3, 30); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v, want context.Canceled", err)
	}
}

func TestEntryReceipt(t *testing.T) {
	f := newFixture(t)
	const chain = "wsp_receipts"
	recs := records(t, chain, 30)
	f.ingest(t, chain, recs[:21])
	if _, _, _, err := f.x.EntryReceipt(context.Background(), chain, 0); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("before any seal: %v, want ErrNotSealed", err)
	}
	f.seal(t, chain)
	f.ingest(t, chain, recs[21:])
	es, err := f.store.Entries(context.Background(), chain, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	pub := f.svc.Signer().Public()
	want := f.rootAt(t, chain, 21)
	for _, e := range es[:21] {
		rc, top, sealed, err := f.x.EntryReceipt(context.Background(), chain, e.Seq)
		if err != nil {
			t.Fatalf("entry %d: %v", e.Seq, err)
		}
		root, r, err := receipts.VerifyInclusion(rc, ledger.Hasher.HashLeaf(e.Link[:]), pub)
		if err != nil {
			t.Fatalf("entry %d: %v", e.Seq, err)
		}
		if !bytes.Equal(root, want[:]) || sealed.Root != ledger.RootString(want) || top.Size != 21 {
			t.Errorf("entry %d: root %x, seal root %s of size %d; want %x at 21", e.Seq, root, sealed.Root, top.Size, want)
		}
		if p := r.Inclusion[0]; p.LeafIndex != e.Seq || p.TreeSize != 21 || r.Claims.Subject != chain {
			t.Errorf("entry %d: proof of %d at %d, subject %q", e.Seq, p.LeafIndex, p.TreeSize, r.Claims.Subject)
		}
	}
	if _, _, _, err := f.x.EntryReceipt(context.Background(), chain, 21); !errors.Is(err, ErrNotSealed) {
		t.Errorf("entry after the seal: %v, want ErrNotSealed", err)
	}
}

// TestChainsBundleVerifies: a bundle of a chain sealed twice verifies offline and carries
// the chain consistency receipt between the two seals.
func TestChainsBundleVerifies(t *testing.T) {
	f := newFixture(t)
	const chain = "wsp_bundle"
	recs := records(t, chain, 40)
	f.ingest(t, chain, recs[:13])
	s1 := f.seal(t, chain)
	f.ingest(t, chain, recs[13:])
	s2 := f.seal(t, chain)
	var buf bytes.Buffer
	if err := f.x.Chains(context.Background(), &buf, []Chain{{Chain: chain, Size: 40}}); err != nil {
		t.Fatal(err)
	}
	r, err := bundle.OpenZipBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cf := bundle.ChainConsistencyFile(bundle.ChainDir(chain), s1.N, s2.N)
	rc, err := r.ReadFile(cf, 1<<20)
	if err != nil {
		t.Fatalf("%s: %v", cf, err)
	}
	old := f.rootAt(t, chain, 13)
	newRoot, _, err := receipts.VerifyConsistency(rc, old[:], f.svc.Signer().Public())
	if err != nil {
		t.Fatal(err)
	}
	if want := f.rootAt(t, chain, 40); !bytes.Equal(newRoot, want[:]) {
		t.Errorf("consistency receipt root %x, chain root %x", newRoot, want)
	}
	// Pin the keys the fixture's service signs with, as its operator would publish them.
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{
		TrustedLogKeys: []string{f.svc.Log().VerifierKey()}, TrustedIssuers: []crypto.PublicKey{f.svc.Signer().Public()}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verifier.Verified {
		t.Errorf("verdict %s: %+v", rep.Verdict, rep.Checks)
	}
	if err := f.x.Chains(context.Background(), io.Discard, nil); err == nil {
		t.Error("a bundle of no chain was written")
	}
}

// BenchmarkChains exports a chain of 2000 signed CHAP envelopes sealed three times: the
// entries, three seal receipts, two chain consistency receipts and the trust files.
func BenchmarkChains(b *testing.B) {
	f := newFixture(b)
	const chain = "wsp_bench"
	recs := records(b, chain, 2000)
	for _, r := range [][2]int{{0, 500}, {500, 1300}, {1300, 2000}} {
		f.ingest(b, chain, recs[r[0]:r[1]])
		f.seal(b, chain)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := f.x.Chains(context.Background(), io.Discard, []Chain{{Chain: chain, Size: 2000}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChainConsistencyReceipt cuts the consistency receipt from size 700 to 2000 of a
// chain of 2000 signed CHAP envelopes (SCRAPI GET /v1/chains/{chain}/consistency).
func BenchmarkChainConsistencyReceipt(b *testing.B) {
	f := newFixture(b)
	const chain = "wsp_bench"
	f.ingest(b, chain, records(b, chain, 2000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.x.ChainConsistencyReceipt(context.Background(), chain, 700, 2000); err != nil {
			b.Fatal(err)
		}
	}
}

// exportBenchEntries is the chain size of BenchmarkExportChain: large enough that the
// per-entry path (store pages, JSON lines, deflate, digest, prover) dominates the fixed cost
// of the trust files and receipts.
const exportBenchEntries = 100_000

// BenchmarkExportChain exports one chain of 100,000 signed CHAP envelopes sealed four times,
// as GET /v1/chains/{chain}/export serves it, and reports entries/s and the bundle's size.
func BenchmarkExportChain(b *testing.B) {
	f := newFixture(b)
	const chain = "wsp_export"
	recs := records(b, chain, exportBenchEntries)
	for i := 0; i < len(recs); i += 1000 {
		f.ingest(b, chain, recs[i:min(i+1000, len(recs))])
		if (i+1000)%(exportBenchEntries/4) == 0 {
			f.seal(b, chain)
		}
	}
	var size countingWriter
	b.ReportAllocs()
	for b.Loop() {
		size = 0
		if err := f.x.Chains(context.Background(), &size, []Chain{{Chain: chain, Size: exportBenchEntries}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(exportBenchEntries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(float64(size)/(1<<20), "bundle-MiB")
}

// countingWriter discards what it is given and counts the bytes.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkEntryReceipt cuts the chain receipt of one entry of a sealed chain of 2,000 and of
// 20,000 signed CHAP envelopes (GET …/entries/{seq}/receipt and …/entry-receipt): the cost one
// receipt of audit.submit_to_scitt's range pays.
func BenchmarkEntryReceipt(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("chain=%d", n), func(b *testing.B) {
			f := newFixture(b)
			const chain = "wsp_bench"
			recs := records(b, chain, n)
			for i := 0; i < n; i += 1000 {
				f.ingest(b, chain, recs[i:min(i+1000, n)])
			}
			f.seal(b, chain)
			seq := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := f.x.EntryReceipt(context.Background(), chain, seq); err != nil {
					b.Fatal(err)
				}
				seq = (seq + 7919) % uint64(n)
			}
		})
	}
}
