package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// counter is a Prometheus counter counted in whole events.
type counter struct{ c prometheus.Counter }

// Add adds n events.
func (c counter) Add(n uint64) { c.c.Add(float64(n)) }

// metrics are the Prometheus metrics of one Server, in a registry of its own (no global
// state: two servers in one process count apart).
type metrics struct {
	reg              *prometheus.Registry
	recordsAccepted  counter
	recordsRefused   counter
	recordsDuplicate counter
	batches          counter
	seals            counter
	exports          counter
	pushbacks        counter
	overloaded       counter
	requests         *prometheus.HistogramVec
}

// unmatchedRoute is the route label of requests no route matched.
const unmatchedRoute = "unmatched"

// ingestRoute is the pattern of the ingest route, whose refusals evident_records_refused_total
// counts.
const ingestRoute = "POST /v1/chains/{chain}/entries"

// newMetrics returns the metrics of a server, with extra ones registered beside them;
// logSize and conflictRetries are read at each scrape.
func newMetrics(logSize, conflictRetries func() float64, extra ...prometheus.Collector) *metrics {
	reg := prometheus.NewRegistry()
	newCounter := func(name, help string) counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return counter{c}
	}
	m := &metrics{
		reg:              reg,
		recordsAccepted:  newCounter("evident_records_accepted_total", "Records stored into chains; a record answered again as a duplicate is not counted."),
		recordsRefused:   newCounter("evident_records_refused_total", "Ingest requests refused with a 4xx problem (their records were not stored); 499 and 503 answers are not refusals."),
		recordsDuplicate: newCounter("evident_records_duplicate_total", "Records of ingest requests answered again as duplicates of stored ones (resends), not stored twice."),
		batches:          newCounter("evident_ingest_batches_total", "Ingest requests that stored at least one record (201); a resend of stored records (200) is not counted."),
		seals:            newCounter("evident_seals_total", "Seals made through the API (201); a seal answered again (200) is not counted, nor one the --seal-every or --seal-interval timer made."),
		exports:          newCounter("evident_exports_total", "Bundles exported."),
		pushbacks:        newCounter("evident_pushback_total", "Requests answered 503 because the log pushed back."),
		overloaded:       newCounter("evident_overloaded_total", "Requests answered 503 overloaded: their body did not fit in --max-inflight-bytes."),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "evident_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern, method and status class (2xx, 4xx, …).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method", "code"}),
	}
	reg.MustRegister(m.requests,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "evident_log_size", Help: "Entries in the transparency log (latest checkpoint)."}, logSize),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "evident_conflict_retries_total",
			Help: "Writes retried because the store refused them as conflicting (another writer, a deadlock)."}, conflictRetries),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(extra...)
	return m
}

// handler serves the registry in the Prometheus exposition formats. A registry that cannot
// be gathered is logged at ERROR and answered 500 internal as a problem detail, where promhttp
// would answer its error in plain text.
func (m *metrics) handler(logger *slog.Logger) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorLog: errorLog{logger}})
	return problemsOf(h, func(int, string, string) (api.ProblemCode, string) {
		return api.CodeInternal, "the metrics cannot be gathered; the service log has why"
	})
}

// errorLog is promhttp's error log on the service log, at ERROR.
type errorLog struct{ l *slog.Logger }

func (e errorLog) Println(v ...any) { e.l.Error("serving metrics", "err", fmt.Sprint(v...)) }

// conflictRetries is the pipeline's count for the evident_conflict_retries_total counter.
func (s *Server) conflictRetries() float64 { return float64(s.c.Pipeline.ConflictRetries()) }

// groupCommitMetrics are the counters of the pipeline's group commits, read at each scrape.
func (s *Server) groupCommitMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "evident_group_commits_total",
			Help: "Group commits of ingest requests (one store transaction and one fsync each; a lone request is a group of one). Distributed replicas do not group: 0."},
			func() float64 { g, _ := s.c.Pipeline.GroupCommits(); return float64(g) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "evident_group_commit_batches_total",
			Help: "Ingest requests the group commits held; over evident_group_commits_total, the requests per fsync."},
			func() float64 { _, b := s.c.Pipeline.GroupCommits(); return float64(b) }),
	}
}

// inflightMetrics are the gauges of the request body budget (inflight.go), read at each scrape.
func (s *Server) inflightMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "evident_request_body_bytes_in_flight",
			Help: "Request body bytes reserved by requests being served (at most evident_request_body_bytes_limit)."},
			func() float64 { return float64(s.inflight.inUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "evident_request_body_bytes_limit",
			Help: "The request body bytes evidentd holds at once (--max-inflight-bytes)."},
			func() float64 { return float64(s.c.MaxInFlight) }),
	}
}

// logSize is the log's size for the evident_log_size gauge; 0 while none is published.
func (s *Server) logSize() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := s.c.Service.Log().Size(ctx)
	if err != nil {
		return 0
	}
	return float64(n)
}

// statusWriter records what a handler answered, for the access log and the metrics, and
// keeps the write deadline ahead of each write (Config.WriteTimeout).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64

	progress time.Duration // Config.WriteTimeout; 0: deadlines left alone
	extended time.Time     // when the deadline was last moved
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.extend()
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush lets streaming handlers (exports, COP Ledgers) flush through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.extend()
		f.Flush()
	}
}

// extend moves the connection's write deadline to progress from now, so that a write is cut
// only when the client has read nothing for that long, however long the response and however
// long the handler worked before writing. The deadline is moved at most once a tenth of
// progress: a write always has at least nine tenths of it.
func (w *statusWriter) extend() {
	if w.progress <= 0 {
		return
	}
	now := time.Now()
	if now.Sub(w.extended) < w.progress/10 {
		return
	}
	w.extended = now
	// A writer without deadlines (a test's recorder) leaves them to whoever serves it.
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(now.Add(w.progress))
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe wraps the mux: requests no route matches get a JSON problem instead of the mux's
// plain text, and every request is timed into the latency histogram and, when configured,
// written to the access log.
func (s *Server) observe(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, progress: s.c.WriteTimeout}
		route := unmatchedRoute
		if h, pattern := mux.Handler(r); !canonicalPath(r.URL.Path) || slashRedirect(pattern, r.URL.Path) {
			// The mux would answer a redirect in HTML: to the cleaned path, or from /log to
			// /log/.
			s.notCanonical(sw, r)
		} else if pattern == "" {
			s.unmatched(sw, r, h)
		} else if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			// Go's handlers would drop the malformed pair and go on without it.
			s.badQuery(sw, r, pattern, err)
			route = pattern
		} else {
			mux.ServeHTTP(sw, r)
			route = pattern
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		if route == ingestRoute && sw.status >= 400 && sw.status < 500 && sw.status != 499 {
			s.m.recordsRefused.Add(1) // whatever refused it: the authorization, the Content-Type, the body, a record
		}
		// What the handler left in the server's buffer is written after it returns.
		sw.extend()
		end := time.Now()
		elapsed := end.Sub(start)
		s.m.requests.WithLabelValues(route, methodLabel(r.Method), statusClass(sw.status)).Observe(elapsed.Seconds())
		if s.c.AccessLog {
			s.logRequest(r, end, route, sw, elapsed)
		}
	})
}

// logRequest writes the access log's line for r, answered at end: an Info record "http
// request" with method, path, status, bytes, duration, remote and route. It goes to the
// logger's handler directly, as slog's documentation shows for wrappers, so no caller's
// program counter is captured for a source position that would always be this function's;
// the record carries none, and the handler is asked first whether Info is enabled.
func (s *Server) logRequest(r *http.Request, end time.Time, route string, sw *statusWriter, elapsed time.Duration) {
	ctx := r.Context()
	h := s.c.Logger.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(end, slog.LevelInfo, "http request", 0)
	rec.AddAttrs(slog.String("method", echo.String(r.Method)), slog.String("path", echo.String(r.URL.RequestURI())), slog.Int("status", sw.status),
		slog.Int64("bytes", sw.bytes), slog.Duration("duration", elapsed), slog.String("remote", r.RemoteAddr),
		slog.String("route", route))
	_ = h.Handle(ctx, rec) // as slog.Logger does, a handler's failure to write is not the request's
}

// statusClass is the code label of a status: "2xx", "4xx", …
func statusClass(status int) string {
	switch status / 100 {
	case 1:
		return "1xx"
	case 2:
		return "2xx"
	case 3:
		return "3xx"
	case 4:
		return "4xx"
	case 5:
		return "5xx"
	}
	return strconv.Itoa(status/100) + "xx"
}

// methodLabel bounds the method label to the standard methods: a client chooses the
// method, and every distinct label value is a new time series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// unmatched answers a request no route matched with a problem detail: 405 with the mux's
// Allow header when the path is served under other methods, 404 otherwise.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if scittUnmatched(w, r, rec.status, rec.header.Get("Allow")) {
		return // a SCRAPI path: a concise problem detail (problemcbor.go)
	}
	if rec.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", rec.header.Get("Allow"))
		problem(w, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, echo.String(r.Method)+" is not served on "+echo.String(r.URL.Path)+"; allowed: "+rec.header.Get("Allow"), -1)
		return
	}
	problem(w, http.StatusNotFound, api.CodeNoSuchRoute, "no route "+echo.String(r.Method)+" "+echo.String(r.URL.Path)+"; see GET /v1/openapi.json", -1)
}

// canonicalPath reports whether p is a path as the routes name it: absolute, without an
// empty, "." or ".." segment. http.ServeMux redirects any other to its cleaned form, in HTML.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// slashRedirect reports whether the mux, having matched p to pattern, would redirect p to the
// subtree pattern's path with its trailing slash (/log to /log/): the pattern the mux names is
// the one it redirects to, its path one slash longer than p.
func slashRedirect(pattern, p string) bool {
	if _, pp, ok := strings.Cut(pattern, " "); ok {
		pattern = pp // the pattern without its method
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // without its host
	}
	return strings.HasSuffix(pattern, "/") && pattern == p+"/"
}

// notCanonical answers a path that is no route's as written, though the mux would redirect it
// to one (a doubled slash, a "." or ".." segment, /log for /log/): 404 no_such_route naming the
// path to send instead, where the mux would answer a redirect in HTML. A path is served only
// as the routes name it, as the tile log serves only the canonical tlog-tiles paths.
func (s *Server) notCanonical(w http.ResponseWriter, r *http.Request) {
	detail := "no route " + echo.String(r.Method) + " " + echo.String(r.URL.Path) + ": a path is served only as written in GET /v1/openapi.json"
	if r.URL.Path != "" && r.URL.Path[0] == '/' {
		detail += ", without empty, '.' or '..' segments (" + echo.String(path.Clean(r.URL.Path)) + "?)"
	}
	problem(w, http.StatusNotFound, api.CodeNoSuchRoute, detail, -1)
}

// badQuery answers a query that does not parse (a raw ';' in it, a bad %-escape), in the
// route's problem format: every handler reads its query through url.Values, which would
// silently drop the pair and serve the request without it.
func (s *Server) badQuery(w http.ResponseWriter, r *http.Request, pattern string, err error) {
	detail := fmt.Sprintf("query: %s: separate parameters with '&' and percent-encode a ';' in a value as %%3B (a content type's, for one)", echo.String(err.Error()))
	if conciseRoute(pattern) {
		conciseProblem(w, http.StatusBadRequest, api.CodeBadQuery, detail, r.URL.Path)
		return
	}
	problem(w, http.StatusBadRequest, api.CodeBadQuery, detail, -1)
}

// headerRecorder keeps the status and headers the mux's own 404 and 405 handlers write; their
// plain-text body is dropped.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) WriteHeader(code int)        { h.status = code }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
