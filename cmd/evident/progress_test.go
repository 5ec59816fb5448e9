package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestProgressPlainLines: on a non-terminal, a plain line at each tenth of a known total, at
// each doubling of an unknown one, at least every plainEvery, and a last line with the rate.
func TestProgressPlainLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unit    string
		total   uint64
		updates []uint64
		wait    time.Duration // clock advance before each update
		want    []string
	}{
		{"tenths", "entries", 1000, []uint64{50, 100, 150, 250, 990, 1000}, time.Second, []string{
			"import c: 100/1000 entries (10%), 50 entries/s",
			"import c: 250/1000 entries (25%), 62 entries/s",
			"import c: 990/1000 entries (99%), 198 entries/s",
			"import c: 1000/1000 entries (100%), 167 entries/s in 6s",
		}},
		{"unknown total doubles", "bytes", 0, []uint64{1 << 19, 1 << 20, 3 << 20, 5 << 20}, time.Second, []string{
			"export c: 1.0 MiB (0.5 MiB/s)",
			"export c: 3.0 MiB (1.0 MiB/s)",
			"export c: 5.0 MiB (1.2 MiB/s)",
			"export c: 5.0 MiB (1.2 MiB/s) in 4s",
		}},
		{"every 30s", "bytes", 0, []uint64{1000, 2000}, plainEvery, []string{
			"export c: 0.0 MiB (0.0 MiB/s)",
			"export c: 0.0 MiB (0.0 MiB/s)",
			"export c: 0.0 MiB (0.0 MiB/s) in 1m0s",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			what := "import c"
			if tc.unit == "bytes" {
				what = "export c"
			}
			p := newProgress(&buf, false, what, tc.unit, tc.total)
			p.now = clock.now
			p.start, p.last = clock.t, clock.t
			for _, u := range tc.updates {
				clock.t = clock.t.Add(tc.wait)
				p.Update(u)
			}
			p.Done(tc.updates[len(tc.updates)-1])
			got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if strings.ContainsAny(buf.String(), "\r\033") {
				t.Errorf("terminal control characters on a non-terminal: %q", buf.String())
			}
		})
	}
	// Quiet: no progress at all, and a nil progress is safe to use.
	var buf bytes.Buffer
	p := newProgress(&buf, true, "x", "entries", 10)
	p.Update(5)
	p.Stop()
	p.Done(10)
	if buf.Len() != 0 {
		t.Fatalf("quiet progress wrote %q", buf.String())
	}
}

// TestProgressLive: on a terminal one line is redrawn in place, at most ten times a second.
func TestProgressLive(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := &progress{w: &buf, what: "submit c", unit: "records", total: 100, live: true, now: clock.now, start: clock.t, last: clock.t}
	for i := uint64(1); i <= 100; i++ {
		clock.t = clock.t.Add(10 * time.Millisecond)
		p.Update(i)
	}
	p.Done(100)
	if n := strings.Count(buf.String(), "\r\033[K"); n < 9 || n > 12 {
		t.Errorf("%d redraws of 100 updates over 1 s, want about 10:\n%q", n, buf.String())
	}
	if !strings.HasSuffix(buf.String(), "\r\033[Ksubmit c: 100/100 records (100%), 100 records/s in 1s\n") {
		t.Errorf("last line %q", buf.String()[max(0, buf.Len()-80):])
	}
}

// TestProgressOnNonTerminal runs the real binary with standard error a pipe, as in CI: a
// submit of 16000 records and the export of the chain write plain progress lines to standard
// error (the export's in entries, counted against the total the service announces; a case
// slice's in bytes), standard output holds only the result, and -quiet silences the progress.
func TestProgressOnNonTerminal(t *testing.T) {
	bin := buildTools(t)
	srv := startDaemon(t)
	dir := t.TempDir()
	const ws = "wsp_progress"
	var recs [][]byte
	if _, err := chapscenario.Long(ws, 16000, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC), func(b []byte) error {
		recs = append(recs, bytes.Clone(b))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	records := filepath.Join(dir, "records.jsonl")
	write(t, records, bytes.Join(recs, []byte("\n")))
	evident := func(args ...string) (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "evident"), args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("evident %q: %v\n%s\n%s", args, err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}

	out, errs := evident("submit", "-url", srv.URL, "-chain", ws, "-batch", "300", records)
	if want := "16000 record(s) accepted into " + ws; !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("submit stdout is not just the result:\n%s", out)
	}
	// A line at each tenth and the last; a runner that stalls for plainEvery adds a line
	// between two tenths, which crosses none.
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	var tenths []string
	prev := 0
	for _, l := range lines[:len(lines)-1] {
		var n int
		if _, err := fmt.Sscanf(l, "submit "+ws+": %d/16000 records", &n); err != nil || n <= prev || !strings.HasSuffix(l, " records/s") {
			t.Errorf("submit progress line %q", l)
			break
		}
		if n/1600 > prev/1600 {
			tenths = append(tenths, l)
		}
		prev = n
	}
	last := lines[len(lines)-1]
	if len(tenths) != 9 || !strings.HasPrefix(tenths[0], "submit "+ws+": 1800/16000 records (11%), ") ||
		!strings.HasPrefix(last, "submit "+ws+": 16000/16000 records (100%), ") || !strings.Contains(last, " records/s in ") {
		t.Errorf("submit progress: want nine plain lines at the tenths and the last, got:\n%s", errs)
	}
	if strings.ContainsAny(errs, "\r\033") {
		t.Errorf("terminal control characters on a pipe: %q", errs)
	}

	if _, errs := evident("seal", "-url", srv.URL, "-chain", ws); errs != "" {
		t.Errorf("seal wrote to standard error: %s", errs)
	}
	zipFile := filepath.Join(dir, "b.zip")
	out, errs = evident("export", "-url", srv.URL, "-chain", ws, "-o", zipFile)
	st, err := os.Stat(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "wrote " + zipFile + " ("; !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("export stdout is not just the result:\n%s", out)
	}
	// The service announces the chain's 16000 entries; they are counted as the bundle streams.
	lines = strings.Split(strings.TrimSpace(errs), "\n")
	prev = 0
	for _, l := range lines[:len(lines)-1] {
		var n int
		if _, err := fmt.Sscanf(l, "export "+ws+": %d/16000 entries", &n); err != nil || n/1600 <= prev/1600 || !strings.HasSuffix(l, " entries/s") {
			t.Errorf("export progress line %q does not cross a tenth after %d", l, prev)
			break
		}
		prev = n
	}
	if last := lines[len(lines)-1]; len(lines) < 3 || !strings.HasPrefix(last, "export "+ws+": 16000/16000 entries (100%), ") ||
		!strings.Contains(last, " entries/s in ") {
		t.Errorf("export progress (bundle %d bytes): want lines at the tenths and the last, got:\n%s", st.Size(), errs)
	}
	// A case slice comes with no count: its progress is in bytes.
	_, errs = evident("export", "-url", srv.URL, "-chain", ws, "-task", "tsk_7", "-o", filepath.Join(dir, "slice.zip"))
	if st, err := os.Stat(filepath.Join(dir, "slice.zip")); err != nil || !strings.HasPrefix(errs, "export "+ws+": "+mib(float64(st.Size()))+" (") ||
		strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "/s) in ") {
		t.Errorf("slice export progress: %v\n%s", err, errs)
	}

	// -quiet: nothing on standard error.
	if _, errs := evident("export", "-quiet", "-url", srv.URL, "-chain", ws, "-o", zipFile); errs != "" {
		t.Errorf("export -quiet wrote to standard error:\n%s", errs)
	}
}
