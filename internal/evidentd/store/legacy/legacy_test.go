package legacy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/legacy/internal/oldfmt"
	"github.com/evident-log/evident/ledger"
)

// expected is the part of testdata/v8/EXPECTED.json the tests check: what the old evidentd
// reported (make-fixture.sh).
type expected struct {
	Summary struct {
		Chains map[string]struct {
			Size uint64      `json:"size"`
			Head ledger.Link `json:"head"`
		} `json:"chains"`
		Journaled struct {
			Chain      string `json:"chain"`
			Entries    uint64 `json:"entries"`
			SizeBefore uint64 `json:"size_before"`
		} `json:"journaled"`
		Seals           int `json:"seals"`
		RegisteredSeals int `json:"registered_seals"`
		EvidenceHeads   []struct {
			Chain      string      `json:"chain"`
			Head       ledger.Link `json:"head"`
			AuditCount uint64      `json:"audit_count"`
		} `json:"evidence_heads"`
		StatementsRegistered int `json:"statements_registered"`
		Forks                int `json:"forks"`
	} `json:"summary"`
	LastBatch struct {
		Acks struct {
			Chain string      `json:"chain"`
			New   int         `json:"new"`
			Size  uint64      `json:"size"`
			Head  ledger.Link `json:"head"`
		} `json:"acks"`
	} `json:"last_batch"`
}

func loadExpected(t *testing.T) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v8", "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Summary.Chains) < 3 {
		t.Fatalf("EXPECTED.json names %d chains", len(e.Summary.Chains))
	}
	return e
}

// copyFixture copies testdata/v8 to a new directory (SQLite may touch the -shm file even
// of a read-only connection) and returns it.
func copyFixture(t testing.TB) string {
	t.Helper()
	src := filepath.Join("testdata", "v8")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// hashFiles returns the SHA-256 of every file under the paths.
func hashFiles(t *testing.T, paths []string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[path] = sha256.Sum256(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func open(t *testing.T, dir string) *Reader {
	t.Helper()
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// allEntries reads a chain's entries in pages of n.
func allEntries(t *testing.T, r *Reader, chain string, n int) []store.Entry {
	t.Helper()
	var out []store.Entry
	from := uint64(0)
	for {
		es, err := r.Entries(context.Background(), chain, from, n)
		if err != nil {
			t.Fatalf("entries of %s from %d: %v", chain, from, err)
		}
		if len(es) == 0 {
			return out
		}
		if len(es) > n {
			t.Fatalf("entries of %s from %d: %d, asked for %d", chain, from, len(es), n)
		}
		out = append(out, es...)
		from = es[len(es)-1].Seq + 1
	}
}

func TestFixture(t *testing.T) {
	ctx := context.Background()
	want := loadExpected(t)
	dir := copyFixture(t)
	r := open(t, dir)
	files := r.Files()
	for _, name := range []string{DBFile, RecordsFile, JournalDir} {
		if !slices.Contains(files, filepath.Join(dir, name)) {
			t.Errorf("Files() = %q, lacks %s", files, name)
		}
	}
	before := hashFiles(t, files)

	chains, err := r.Chains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) != len(want.Summary.Chains) {
		t.Fatalf("%d chains, want %d", len(chains), len(want.Summary.Chains))
	}
	if !slices.IsSortedFunc(chains, func(a, b store.ChainRecord) int { return bytes.Compare([]byte(a.ID), []byte(b.ID)) }) {
		t.Error("chains not in id order")
	}
	for _, c := range chains {
		w, ok := want.Summary.Chains[c.ID]
		if !ok {
			t.Fatalf("chain %q not expected", c.ID)
		}
		if c.Size != w.Size || c.Head != w.Head {
			t.Errorf("chain %s: size %d head %s, the old evidentd reported %d %s", c.ID, c.Size, c.Head, w.Size, w.Head)
		}
		if c.Profile != "chap/0.3" || len(c.Tree) == 0 || len(c.State) == 0 || c.Created.IsZero() {
			t.Errorf("chain %s: profile %q, %d bytes of tree, %d of state, created %v", c.ID, c.Profile, len(c.Tree), len(c.State), c.Created)
		}
		for _, n := range []int{1, 4, 1000} {
			es := allEntries(t, r, c.ID, n)
			if uint64(len(es)) != c.Size {
				t.Fatalf("chain %s: %d entries in pages of %d, size %d", c.ID, len(es), n, c.Size)
			}
			prev := ledger.Genesis
			for i, e := range es {
				if e.Chain != c.ID || e.Seq != uint64(i) || e.Prev != prev || len(e.Record) == 0 || ledger.NextLink(e.Record, e.Prev) != e.Link {
					t.Fatalf("chain %s entry %d: chain %q seq %d, prev %s (want %s), %d record bytes", c.ID, i, e.Chain, e.Seq, e.Prev, prev, len(e.Record))
				}
				if e.Arrival.IsZero() || e.Arrival.Location() != time.UTC || e.Arrival.Nanosecond()%int(time.Millisecond) != 0 || e.Method == "" || e.RecordID == "" {
					t.Fatalf("chain %s entry %d: arrival %v method %q record id %q", c.ID, i, e.Arrival, e.Method, e.RecordID)
				}
				if len(e.Attrs) == 0 {
					t.Errorf("chain %s entry %d (%s): no attributes", c.ID, i, e.Method)
				}
				for name, vs := range e.Attrs {
					if !slices.IsSorted(vs) || len(slices.Compact(slices.Clone(vs))) != len(vs) {
						t.Errorf("chain %s entry %d: attribute %s values %q not sorted and once", c.ID, i, name, vs)
					}
				}
				prev = e.Link
			}
			if prev != c.Head {
				t.Fatalf("chain %s: last link %s, head %s", c.ID, prev, c.Head)
			}
			if c.ID == "wsp_chapref_deep" || c.ID == "wsp_chapref_small" {
				for i, e := range es { // imported audit entries: seq, arrived, prev_hash beside the record
					if len(e.Meta) == 0 || !json.Valid(e.Meta) {
						t.Errorf("chain %s entry %d: meta %q", c.ID, i, e.Meta)
					}
				}
			}
			if c.ID == "wsp_chapref_deep" && !slices.ContainsFunc(es, func(e store.Entry) bool { return bytes.Contains(e.Record, []byte("爱丽丝")) }) {
				t.Errorf("chain %s: no record holds the non-ASCII display name", c.ID)
			}
		}
	}

	// The last batch is in the journal only: the database holds the chain as it was before.
	j := want.Summary.Journaled
	var dbSize uint64
	if err := r.db.QueryRowContext(ctx, `SELECT size FROM chains WHERE id = ?`, j.Chain).Scan(&dbSize); err != nil {
		t.Fatal(err)
	}
	if dbSize != j.SizeBefore || uint64(len(r.jentries[j.Chain])) != j.Entries || len(r.jentries) != 1 {
		t.Fatalf("chain %s: %d in the database, %d entries from the journal (%d chains), want %d + %d", j.Chain, dbSize, len(r.jentries[j.Chain]), len(r.jentries), j.SizeBefore, j.Entries)
	}
	ack := want.LastBatch.Acks
	if ack.Chain != j.Chain || ack.New != int(j.Entries) || ack.Size != dbSize+j.Entries {
		t.Fatalf("last batch acks %+v", ack)
	}
	jc, _, err := r.dbChain(ctx, j.Chain)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chains {
		if c.ID == j.Chain && (c.Size != ack.Size || c.Head != ack.Head || !c.Created.Equal(jc.Created) || c.LastSeal != jc.LastSeal || c.SealedSize != jc.SealedSize) {
			t.Errorf("journaled chain %+v, database row %+v, ack %+v", c, jc, ack)
		}
	}

	seals, err := r.Seals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	registered := 0
	for _, s := range seals {
		if len(s.Statement) == 0 || s.SealedAt.IsZero() || s.EntryHash == ([32]byte{}) {
			t.Errorf("seal %+v", s)
		}
		if s.Registered {
			registered++
			if len(s.Receipt) == 0 || len(s.Checkpoint) == 0 {
				t.Errorf("registered seal %s/%d without receipt or checkpoint", s.Chain, s.N)
			}
		}
	}
	if len(seals) != want.Summary.Seals || registered != want.Summary.RegisteredSeals {
		t.Errorf("%d seals (%d registered), want %d (%d)", len(seals), registered, want.Summary.Seals, want.Summary.RegisteredSeals)
	}

	regs, err := r.Registrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	statements, policies := 0, 0
	for _, g := range regs {
		switch g.Kind {
		case store.KindStatement:
			statements++
		case store.KindPolicy:
			policies++
		default:
			t.Errorf("registration %s of kind %q", g.ID, g.Kind)
		}
		if !g.Registered || len(g.Receipt) == 0 || len(g.Checkpoint) == 0 || len(g.Statement) == 0 || g.Received.IsZero() {
			t.Errorf("registration %s (%s): registered %v, %d receipt bytes", g.ID, g.Kind, g.Registered, len(g.Receipt))
		}
	}
	if statements != want.Summary.StatementsRegistered || policies < 1 || regs[0].Kind != store.KindPolicy {
		t.Errorf("%d statements, %d policies (first %q), want %d statements after a policy", statements, policies, regs[0].Kind, want.Summary.StatementsRegistered)
	}

	forks, err := r.Forks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != want.Summary.Forks || forks[0].Chain != "wsp_support_triage" || forks[0].Seq != 0 || len(forks[0].Record) == 0 {
		t.Errorf("forks %+v", forks)
	}

	heads, err := r.EvidenceHeads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != len(want.Summary.EvidenceHeads) {
		t.Fatalf("evidence heads %+v", heads)
	}
	for i, h := range heads {
		w := want.Summary.EvidenceHeads[i]
		if h.Chain != w.Chain || h.Head != w.Head || h.AuditCount != w.AuditCount || h.ReportedAt.IsZero() {
			t.Errorf("evidence head %+v, want %+v", h, w)
		}
	}

	claims, err := r.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every entry evidentd appended to the log was claimed: the seals, the policy, the
	// statement (and the genesis entry).
	if len(claims) < len(seals)+len(regs) {
		t.Errorf("%d claims for %d seals and %d registrations", len(claims), len(seals), len(regs))
	}
	for _, c := range claims {
		if !c.Appended || c.Owner == "" {
			t.Errorf("claim %+v", c)
		}
	}

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	after := hashFiles(t, files)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed by reading", p)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files before reading, %d after", len(before), len(after))
	}
}

func TestNoLegacy(t *testing.T) {
	_, err := Open(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNoLegacy) {
		t.Fatalf("got %v, want ErrNoLegacy", err)
	}
}

func TestSchemaVersion(t *testing.T) {
	for _, v := range []int{7, 9} {
		dir := copyFixture(t)
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`PRAGMA user_version = ` + map[int]string{7: "7", 9: "9"}[v]); err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = Open(context.Background(), dir)
		if !errors.Is(err, ErrSchema) {
			t.Fatalf("version %d: got %v, want ErrSchema", v, err)
		}
		t.Logf("version %d: %v", v, err)
	}
}

// segment returns the path of the fixture's only journal segment and its frames' offsets.
func segment(t *testing.T, dir string) (string, []int) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, JournalDir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("journal segments %q", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for off := len(oldfmt.SegmentMagic); off < len(data); {
		p, ok := oldfmt.ParseFrame(data[off:])
		if !ok {
			t.Fatalf("bad frame at %d", off)
		}
		offs = append(offs, off)
		off += oldfmt.FrameHeader + len(p)
	}
	if len(offs) < 3 {
		t.Fatalf("%d frames in the journal", len(offs))
	}
	return segs[0], offs
}

func TestCorruptJournalFrame(t *testing.T) {
	dir := copyFixture(t)
	path, offs := segment(t, dir)
	data, _ := os.ReadFile(path)
	data[offs[1]+oldfmt.FrameHeader+5] ^= 0x40 // a payload byte of a frame in the middle
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dir)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
}

func TestCorruptJournalPayload(t *testing.T) {
	dir := copyFixture(t)
	path, offs := segment(t, dir)
	data, _ := os.ReadFile(path)
	// A frame that checks, holding a payload that does not decode, in the middle.
	bad := oldfmt.AppendFrame(nil, []byte{oldfmt.PayloadFormat, 9})
	data = slices.Concat(data[:offs[1]], bad, data[offs[1]:])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dir)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
}

func TestTornJournalTail(t *testing.T) {
	ctx := context.Background()
	dir := copyFixture(t)
	path, offs := segment(t, dir)
	data, _ := os.ReadFile(path)
	last := offs[len(offs)-1]
	want := open(t, dir)
	wantChains, err := want.Chains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range [][]byte{
		data[last : last+oldfmt.FrameHeader+3], // a frame cut short
		make([]byte, 40),                       // zeros
		{0xff, 0xff, 0xff, 0xff, 0, 1, 2},      // garbage
	} {
		torn := slices.Concat(data, tail)
		if err := os.WriteFile(path, torn, 0o644); err != nil {
			t.Fatal(err)
		}
		r := open(t, dir)
		got, err := r.Chains(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i].Size != wantChains[i].Size || got[i].Head != wantChains[i].Head {
				t.Fatalf("after a torn tail: chain %s size %d, want %d", got[i].ID, got[i].Size, wantChains[i].Size)
			}
		}
		r.Close()
		if b, _ := os.ReadFile(path); !bytes.Equal(b, torn) {
			t.Fatal("the torn tail was cut off: the reader wrote")
		}
	}
	// The last frame cut short: its batch is not read, as the old store never
	// acknowledged it.
	if err := os.WriteFile(path, data[:len(data)-7], 0o644); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	got, err := r.Chains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.ID == "wsp_support_triage" && c.Size >= wantChains[2].Size {
			t.Fatalf("a torn last frame was read: size %d", c.Size)
		}
	}
}

// TestJournalHeldTwice: batches the database (or the journal before them) holds already
// are read once.
func TestJournalHeldTwice(t *testing.T) {
	ctx := context.Background()
	dir := copyFixture(t)
	path, offs := segment(t, dir)
	data, _ := os.ReadFile(path)
	// Every frame appended again: each batch then repeats one the chain already has.
	again := slices.Concat(data, data[offs[0]:])
	if err := os.WriteFile(path, again, 0o644); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	chains, err := r.Chains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := loadExpected(t)
	for _, c := range chains {
		if c.Size != want.Summary.Chains[c.ID].Size {
			t.Errorf("chain %s: size %d after repeated frames, want %d", c.ID, c.Size, want.Summary.Chains[c.ID].Size)
		}
	}
}

// TestOddPath: a data directory whose path holds what a URI filename escapes.
func TestOddPath(t *testing.T) {
	src := copyFixture(t)
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	if err := os.Rename(src, dir); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	chains, err := r.Chains(context.Background())
	if err != nil || len(chains) != 3 {
		t.Fatalf("%d chains, %v", len(chains), err)
	}
}
