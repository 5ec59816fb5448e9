package recordfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func open(t testing.TB, path string, kept int64) *File {
	t.Helper()
	f, err := Open(path, kept)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func records(n int, tag string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, `{"n":%d,"tag":%q,"pad":%q}`, i, tag, bytes.Repeat([]byte("x"), i*37%500))
	}
	return out
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db.records")
	f := open(t, path, 0)
	first := records(10, "a")
	places, end, err := f.Write(0, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	second := records(5, "b")
	more, end2, err := f.Write(end, second)
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Off != end {
		t.Fatalf("second write begins at %d, want the end %d", more[0].Off, end)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	all := append(append([]Place{}, places...), more...)
	want := append(append([][]byte{}, first...), second...)
	for name, sel := range map[string][]int{
		"all in order": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
		"gaps":         {0, 2, 3, 9, 14},
		"backwards":    {14, 13, 1},
		"one":          {7},
		"none":         {},
	} {
		ps := make([]Place, len(sel))
		for i, k := range sel {
			ps[i] = all[k]
		}
		got, err := f.Read(ps)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, k := range sel {
			if !bytes.Equal(got[i], want[k]) {
				t.Fatalf("%s: record %d = %q, want %q", name, k, got[i], want[k])
			}
			if cap(got[i]) != len(got[i]) {
				t.Fatalf("%s: record %d's capacity reaches into its neighbour", name, k)
			}
		}
	}
	// Reopened with the end the database would name, everything reads back.
	f.Close()
	g := open(t, path, end2)
	got, err := g.Read(all)
	if err != nil || !bytes.Equal(got[14], want[14]) {
		t.Fatalf("after reopening: %q, %v", got, err)
	}
}

// TestOverwritePastEnd: bytes a transaction wrote and did not commit are overwritten by the
// next write from the same end, and the kept records are untouched.
func TestOverwritePastEnd(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "r"), 0)
	kept, end, err := f.Write(0, records(3, "kept"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Write(end, records(8, "rolled back")); err != nil {
		t.Fatal(err)
	}
	again, _, err := f.Write(end, [][]byte{[]byte(`{"again":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Read(append(kept, again...))
	if err != nil {
		t.Fatal(err)
	}
	if string(got[3]) != `{"again":true}` || !bytes.Equal(got[0], records(3, "kept")[0]) {
		t.Fatalf("read %q", got)
	}
}

func TestRefusesCorruption(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r")
	f := open(t, path, 0)
	places, end, err := f.Write(0, records(4, "a"))
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(raw)
	flipped[len(magic)+int(places[2].Off)+20] ^= 1 // inside the third record
	os.WriteFile(path, flipped, 0o644)
	g := open(t, path, end)
	if _, err := g.Read(places[:2]); err != nil {
		t.Fatalf("records before the flipped byte: %v", err)
	}
	if _, err := g.Read(places); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a flipped byte: %v, want ErrCorrupt", err)
	}
	if _, err := g.Read([]Place{{Off: places[1].Off, Len: places[1].Len + 1}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a place whose length is not the frame's: %v, want ErrCorrupt", err)
	}
	if _, err := g.Read([]Place{{Off: end, Len: 10}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a place past the end: %v, want ErrCorrupt", err)
	}
	g.Close()

	for name, c := range map[string]struct {
		content []byte
		kept    int64
	}{
		"shorter than the database names": {raw[:len(raw)-1], end},
		"another magic":                   {append([]byte("EVRECS2\n"), raw[len(magic):]...), end},
		"empty":                           {nil, 0},
	} {
		os.WriteFile(path, c.content, 0o644)
		if _, err := Open(path, c.kept); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Open = %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "absent"), 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an absent file the database names bytes of: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "absent")); err == nil {
		t.Errorf("Open created a file the database names bytes of")
	}
}

func TestRefusesEmptyRecord(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "r"), 0)
	if _, _, err := f.Write(0, [][]byte{[]byte("x"), nil}); err == nil {
		t.Fatal("wrote an empty record")
	}
}

func TestPathFor(t *testing.T) {
	if got := PathFor(filepath.Join("data", "ledger.db")); got != filepath.Join("data", "ledger.db.records") {
		t.Fatalf("PathFor = %q", got)
	}
}

// FuzzRead reads arbitrary file content at arbitrary places: an error or the records, never
// a panic, and never a record that is not its frame's payload.
func FuzzRead(f *testing.F) {
	f.Add([]byte("\x05\x00\x00\x00"), int64(0), 5)
	good := [][]byte{[]byte(`{"a":1}`)}
	f.Fuzz(func(t *testing.T, content []byte, off int64, n int) {
		path := filepath.Join(t.TempDir(), "r")
		if err := os.WriteFile(path, append([]byte(magic), content...), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, int64(len(content)))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if off < 0 || n < 0 || n > 1<<20 {
			return
		}
		got, err := r.Read([]Place{{Off: off, Len: n}})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("an error that is not ErrCorrupt: %v", err)
			}
			return
		}
		if len(got[0]) != n {
			t.Fatalf("a record of %d bytes at a place of %d", len(got[0]), n)
		}
		places, _, err := r.Write(int64(len(content)), good)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := r.Read(places); err != nil || !bytes.Equal(back[0], good[0]) {
			t.Fatalf("a record written after the content: %q, %v", back, err)
		}
	})
}

// TestWriteInChunks writes more than one chunk's worth at once, records straddling the
// chunks' edges and one larger than a chunk, and reads every one back.
func TestWriteInChunks(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "r"), 0)
	var recs [][]byte
	for i := range 3000 {
		recs = append(recs, fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, bytes.Repeat([]byte("y"), 700+i%300)))
	}
	recs = append(recs[:1500], append([][]byte{bytes.Repeat([]byte("z"), 3*writeChunk)}, recs[1500:]...)...)
	places, end, err := f.Write(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := places[len(places)-1].end(); end != want {
		t.Fatalf("end %d, want %d", end, want)
	}
	got, err := f.Read(places)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if !bytes.Equal(got[i], recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestHostilePlaces: places a damaged or tampered database could name are refused with
// ErrCorrupt before anything is allocated for them.
func TestHostilePlaces(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "r"), 0)
	places, end, err := f.Write(0, records(2, "a"))
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]Place{
		"negative offset":       {Off: -13, Len: 5},
		"negative length":       {Off: 0, Len: -1},
		"zero length":           {Off: 0, Len: 0},
		"over the frame bound":  {Off: 0, Len: 1 << 40},
		"past the end":          {Off: end, Len: 1},
		"reaching past the end": {Off: places[1].Off, Len: places[1].Len + 100},
		"huge offset":           {Off: 1 << 62, Len: 1},
	} {
		if _, err := f.Read([]Place{places[0], p}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// TestBrokenAfterFailedWrite: once a write fails, Err says so and every later Write fails,
// while Sync, which then has nothing to make durable, lets transactions without records go
// on; kept records still read.
func TestBrokenAfterFailedWrite(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "r"), 0)
	kept, end, err := f.Write(0, records(2, "kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil || f.Err() != nil {
		t.Fatalf("Sync %v, Err %v", err, f.Err())
	}
	// A read-only descriptor in place of the file: the next write fails as a full disk would.
	ro, err := os.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	rw := f.f
	f.f = ro
	defer rw.Close()
	if _, _, err := f.Write(end, records(1, "lost")); err == nil {
		t.Fatal("a write to a read-only descriptor succeeded")
	}
	if f.Err() == nil {
		t.Fatal("Err is nil after a failed write")
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync with nothing to make durable: %v", err)
	}
	f.f = rw
	if _, _, err := f.Write(end, records(1, "after")); err == nil || !errors.Is(err, f.Err()) {
		t.Fatalf("a write after the failure: %v, want the failure again", err)
	}
	if got, err := f.Read(kept); err != nil || !bytes.Equal(got[1], records(2, "kept")[1]) {
		t.Fatalf("kept records after the failure: %v", err)
	}
	ro.Close()
}
