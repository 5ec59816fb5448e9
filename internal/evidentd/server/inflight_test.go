package server

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/evident-log/evident/api"
)

// budgetServer is a Server with only what takesBody needs: a budget of limit bytes.
func budgetServer(limit int64) *Server {
	return &Server{c: Config{MaxInFlight: limit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		m: newMetrics(func() float64 { return 0 }, func() float64 { return 0 }), inflight: &inflight{limit: limit}}
}

// readAll is a handler that reads its body as the ingest handler does, at most most bytes,
// and reports what it read or the error.
func readAll(most int64, got *[]byte, gotErr *error) handlerMethod {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		*got, *gotErr = io.ReadAll(http.MaxBytesReader(w, r.Body, most))
	}
}

// chunked is a request whose body length is unknown, as a chunked upload's is.
func chunked(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/chains/c/entries", bytes.NewReader(body))
	r.ContentLength = -1
	return r
}

// failingReader fails the test when read: the body of a request that must be refused unread.
type failingReader struct{ t *testing.T }

func (f failingReader) Read([]byte) (int, error) {
	f.t.Error("a body was read that should have been refused unread")
	return 0, io.EOF
}

// TestTakesBody: bodies of known length reserve it up front and are refused 503 overloaded
// unread when the budget has no room; bodies of unknown length reserve as they are read and
// fail with errOverloaded where the budget runs out; a body declared over the route's limit
// is refused as http.MaxBytesReader would, unread; every reservation is given back when the
// handler returns.
func TestTakesBody(t *testing.T) {
	const limit = 4 * inflightStep
	limitOf := func(*Server) bodyBound {
		return bodyBound{max: limit, code: api.CodeRecordTooLarge, what: "request body"}
	}
	t.Run("known length with room", func(t *testing.T) {
		s := budgetServer(limit)
		var got []byte
		var err error
		body := bytes.Repeat([]byte("a"), limit)
		during := int64(-1)
		h := func(s *Server, w http.ResponseWriter, r *http.Request) {
			during = s.inflight.inUse()
			readAll(limit, &got, &err)(s, w, r)
		}
		takesBody(h, limitOf)(s, httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		if err != nil || len(got) != limit || during != limit || s.inflight.inUse() != 0 {
			t.Fatalf("read %d bytes, %v; %d reserved while serving, %d after", len(got), err, during, s.inflight.inUse())
		}
	})
	t.Run("known length without room", func(t *testing.T) {
		s := budgetServer(limit)
		s.inflight.take(limit - 10)
		r := httptest.NewRequest(http.MethodPost, "/v1/chains/c/entries", nil)
		r.Body, r.ContentLength = io.NopCloser(failingReader{t}), 11
		w := httptest.NewRecorder()
		takesBody(func(*Server, http.ResponseWriter, *http.Request) { t.Error("the handler ran") }, limitOf)(s, w, r)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"code":"overloaded"`) {
			t.Fatalf("%d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if s.inflight.inUse() != limit-10 {
			t.Fatalf("%d reserved after the refusal, want %d", s.inflight.inUse(), limit-10)
		}
	})
	t.Run("declared over the route's limit", func(t *testing.T) {
		s := budgetServer(limit)
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Body, r.ContentLength = io.NopCloser(failingReader{t}), limit+1
		var err error
		var got []byte
		takesBody(readAll(limit, &got, &err), limitOf)(s, httptest.NewRecorder(), r)
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) || mbe.Limit != limit || s.inflight.inUse() != 0 {
			t.Fatalf("%v, %d reserved", err, s.inflight.inUse())
		}
	})
	for _, tc := range []struct {
		name      string
		size      int
		taken     int64 // reserved by others
		wantErr   func(error) bool
		wantBytes int
	}{
		{"unknown length, at the route's limit", limit, 0, func(err error) bool { return err == nil }, limit},
		{"unknown length, over the route's limit", limit + 1, 0, func(err error) bool { var m *http.MaxBytesError; return errors.As(err, &m) }, limit},
		{"unknown length, the budget runs out", 3 * inflightStep, 2 * inflightStep, func(err error) bool { return errors.Is(err, errOverloaded) }, 2 * inflightStep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := budgetServer(limit)
			s.inflight.take(tc.taken)
			var got []byte
			var err error
			peak := int64(0)
			h := func(s *Server, w http.ResponseWriter, r *http.Request) {
				readAll(limit, &got, &err)(s, w, r)
				peak = s.inflight.inUse()
			}
			takesBody(h, limitOf)(s, httptest.NewRecorder(), chunked(bytes.Repeat([]byte("b"), tc.size)))
			if !tc.wantErr(err) || len(got) != tc.wantBytes {
				t.Fatalf("read %d bytes, %v; want %d", len(got), err, tc.wantBytes)
			}
			if peak-tc.taken > limit || s.inflight.inUse() != tc.taken {
				t.Fatalf("reserved %d while reading, %d after; others hold %d", peak-tc.taken, s.inflight.inUse(), tc.taken)
			}
		})
	}
	t.Run("unknown length without room for its first step", func(t *testing.T) {
		s := budgetServer(limit)
		s.inflight.take(limit - inflightStep + 1)
		r := chunked(nil)
		r.Body, r.Pattern = io.NopCloser(failingReader{t}), "POST /entries" // a SCRAPI route
		w := httptest.NewRecorder()
		takesBody(func(*Server, http.ResponseWriter, *http.Request) { t.Error("the handler ran") }, limitOf)(s, w, r)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Content-Type") != ConciseProblemType {
			t.Fatalf("%d %s", w.Code, w.Header().Get("Content-Type"))
		}
	})
}

// TestReadBody: a body that declared its length is read into one buffer of that length (one
// byte more); one that did not, or that runs past what it declared, is read whole all the same.
func TestReadBody(t *testing.T) {
	data := bytes.Repeat([]byte("r"), 100000)
	for _, tc := range []struct {
		name     string
		size     int64
		body     []byte
		wantCap  int
		wantRead int
	}{
		{"declared", int64(len(data)), data, len(data) + 1, len(data)},
		{"empty", 0, nil, 1, 0},
		{"unknown", -1, data, -1, len(data)},
		{"longer than declared", 10, data, -1, len(data)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := readAllSized(bytes.NewReader(tc.body), tc.size)
			if err != nil || !bytes.Equal(b, tc.body) || tc.wantCap >= 0 && cap(b) != tc.wantCap {
				t.Fatalf("%d bytes (cap %d), %v; want %d (cap %d)", len(b), cap(b), err, tc.wantRead, tc.wantCap)
			}
		})
	}
}
