package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/receipts"
)

// bodyBound is a route's bound on its request body and the problem a body over it gets.
type bodyBound struct {
	max   int64
	code  api.ProblemCode   // the route's code for a body over max: record_too_large, statement_too_large
	what  string            // what the body is, for the detail: "request body", "statement"
	limit *api.ProblemLimit // the setting that raises max, nil when none does
}

// bodyError is an error reading a request body. It is always the client's doing, never the
// service's: a body over the route's bound, a Content-Length longer than the bytes sent, bad
// chunked framing, a body that did not arrive in time, a connection the client reset. fail
// and scittFail answer it, each in its route family's problem format, through bodyProblem.
type bodyError struct {
	bound bodyBound
	err   error
}

func (e *bodyError) Error() string { return e.bound.what + ": " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// The bounds of the routes that take a body: takesBody reserves for them, readBody reads
// within them.
func ingestBound(s *Server) bodyBound {
	return bodyBound{max: s.c.MaxBody, code: api.CodeRecordTooLarge, what: "request body",
		limit: &api.ProblemLimit{Name: api.LimitMaxBody, Value: s.c.MaxBody, Flag: "--max-body", Env: "EVIDENT_MAX_BODY"}}
}

func evidenceHeadBound(*Server) bodyBound {
	return bodyBound{max: maxEvidenceHeadBody, code: api.CodeRecordTooLarge, what: "request body"}
}

func statementBound(*Server) bodyBound {
	return bodyBound{max: receipts.MaxStatementSize, code: api.CodeStatementTooLarge, what: "statement"}
}

// The media types the body routes take. A body sent without a Content-Type is read as the
// route's first type (curl -d sends one, but a hand-rolled client may send none); parameters
// are taken, but a charset must be UTF-8, JSON's only encoding (RFC 8259). The SCRAPI POST
// /entries checks its own (application/cose, scrapi.go).
var (
	ingestTypes       = []string{api.MediaJSON, api.MediaJSONLines, api.MediaNDJSON}
	evidenceHeadTypes = []string{api.MediaJSON}
)

// consumes puts a handler behind a check of its request's Content-Type: one that names no
// type of types, does not parse, or is given twice, is answered 415 unsupported_media_type, naming the types
// the route takes (in the detail and in Accept-Post), before a byte of the body is read.
func consumes(types []string, h handlerMethod) handlerMethod {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		if err := requestMediaType(r, types); err != nil {
			w.Header().Set("Accept-Post", strings.Join(types, ", "))
			problem(w, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType, err.Error(), -1)
			return
		}
		h(s, w, r)
	}
}

// requestMediaType checks r's Content-Type header, given once at most, against the types its
// route takes; its error is the detail of a 415.
func requestMediaType(r *http.Request, types []string) error {
	if n := len(r.Header.Values("Content-Type")); n > 1 {
		return fmt.Errorf("Content-Type given %d times, once at most; this route takes %s", n, strings.Join(types, ", "))
	}
	return mediaTypeOf(r.Header.Get("Content-Type"), types)
}

// mediaTypeOf checks a request's Content-Type against the types its route takes ("" is the
// route's default); its error is the detail of a 415 problem.
func mediaTypeOf(contentType string, types []string) error {
	if contentType == "" {
		return nil
	}
	takes := strings.Join(types, ", ")
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("Content-Type %s does not parse (%v); this route takes %s", echo.Quote(contentType), err, takes)
	}
	for _, t := range types {
		if mt != t {
			continue
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return fmt.Errorf("Content-Type %s: bodies here are UTF-8, not charset %s; this route takes %s", echo.Quote(contentType), echo.Quote(cs), takes)
		}
		return nil
	}
	return fmt.Errorf("Content-Type %s is not taken here; this route takes %s (a body without Content-Type is read as %s)", echo.Quote(mt), takes, types[0])
}

// readBody reads r's body, at most b.max bytes of it, into one buffer of its declared length
// when it declared one (readAllSized). An error is a *bodyError.
func readBody(w http.ResponseWriter, r *http.Request, b bodyBound) ([]byte, error) {
	body, err := readAllSized(http.MaxBytesReader(w, r.Body, b.max), bodySize(r, b.max))
	if err != nil {
		return nil, &bodyError{bound: b, err: err}
	}
	return body, nil
}

// bodyProblem is the one place a body that could not be read is classified:
//
//   - over the route's bound (*http.MaxBytesError): 413 with the route's code and limit;
//   - the connection reset or closed under the read (the client is gone): 499 canceled, which
//     nobody reads;
//   - anything else — io.ErrUnexpectedEOF (the body ended before its Content-Length, or in a
//     chunk), the chunked reader's framing errors, a read that timed out: 400 bad_body.
//
// It logs the error at Debug: a client's broken body is no fault of the service, and a client
// that sends many must not fill the service log.
func (s *Server) bodyProblem(r *http.Request, e *bodyError) (status int, code api.ProblemCode, detail string, limit *api.ProblemLimit) {
	s.c.Logger.Debug("request body unreadable", "route", r.Pattern, "remote", r.RemoteAddr, "err", e.err)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(e.err, &mbe):
		return http.StatusRequestEntityTooLarge, e.bound.code, fmt.Sprintf("%s over %d bytes", e.bound.what, e.bound.max), e.bound.limit
	case errors.Is(e.err, syscall.ECONNRESET), errors.Is(e.err, syscall.ECONNABORTED), errors.Is(e.err, net.ErrClosed):
		return 499, api.CodeCanceled, "the client went away before its " + e.bound.what + " ended", nil
	case errors.Is(e.err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, api.CodeBadBody, fmt.Sprintf("the %s ended early: fewer bytes than its Content-Length, or in the middle of a chunk", e.bound.what), nil
	case errors.As(e.err, &ne) && ne.Timeout():
		return http.StatusBadRequest, api.CodeBadBody, fmt.Sprintf("the %s did not arrive in time", e.bound.what), nil
	default:
		return http.StatusBadRequest, api.CodeBadBody, fmt.Sprintf("the %s cannot be read: %s", e.bound.what, echo.String(e.err.Error())), nil
	}
}

// streamFailed logs a streamed answer (a bundle, a COP Ledger) that failed once its headers
// were out, when it can only be cut short. A client that went away is no fault of the
// service and is logged at Debug: it hung up, or a write to it failed, and net/http ends the
// request's context for both. Any other failure is the service's: ERROR.
func (s *Server) streamFailed(r *http.Request, msg string, args ...any) {
	level := slog.LevelError
	if r.Context().Err() != nil {
		level = slog.LevelDebug
	}
	s.c.Logger.Log(context.Background(), level, msg, args...)
}
