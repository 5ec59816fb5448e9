package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder records the write deadlines set through http.ResponseController.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// TestWriteDeadlineFollowsWrites: with a write timeout, the first write of an answer moves
// the connection's write deadline that far ahead, later writes within a tenth of it do not
// move it again, and serving without one sets none.
func TestWriteDeadlineFollowsWrites(t *testing.T) {
	for _, progress := range []time.Duration{0, time.Hour} {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		before := time.Now()
		w := &statusWriter{ResponseWriter: rec, progress: progress}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("a"))
		w.Flush()
		switch {
		case progress == 0 && len(rec.deadlines) != 0:
			t.Fatalf("no write timeout, deadlines %v", rec.deadlines)
		case progress > 0 && (len(rec.deadlines) != 1 || rec.deadlines[0].Before(before.Add(progress))):
			t.Fatalf("deadlines %v, want one at least %v after %v", rec.deadlines, progress, before)
		}
	}
}

// TestWriteTimeoutIsProgress: behind a real http.Server with a write timeout, an answer
// written after the handler worked for longer than the timeout, and a streamed answer that
// takes longer than the timeout in all, both arrive whole: the timeout bounds a write's wait
// for the client, not the response (an export of any size is not cut while it is read).
func TestWriteTimeoutIsProgress(t *testing.T) {
	const timeout = 500 * time.Millisecond
	s := &Server{c: Config{WriteTimeout: timeout, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		m: newMetrics(func() float64 { return 0 }, func() float64 { return 0 })}
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /late", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * timeout)
		w.Write([]byte("late\n"))
	})
	mux.HandleFunc("GET /long", func(w http.ResponseWriter, r *http.Request) {
		for range 4 {
			w.Write(chunk)
			w.(http.Flusher).Flush()
			time.Sleep(timeout / 2)
		}
	})
	srv := httptest.NewUnstartedServer(s.observe(mux))
	srv.Config.WriteTimeout = timeout
	srv.Start()
	t.Cleanup(srv.Close)
	for path, want := range map[string]int{"/late": 5, "/long": 4 * len(chunk)} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			resp, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || len(b) != want {
				t.Fatalf("%d of %d bytes: %v", len(b), want, err)
			}
		})
	}
}
