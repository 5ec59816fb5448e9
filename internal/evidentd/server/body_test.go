package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/evident-log/evident/api"
)

// TestBodyProblem: every error reading a request body is the client's: 413 with the route's
// code over its bound, 499 when the connection went under the read, 400 bad_body otherwise;
// each is logged at Debug and at no other level.
func TestBodyProblem(t *testing.T) {
	bound := bodyBound{max: 10, code: api.CodeStatementTooLarge, what: "statement"}
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   api.ProblemCode
	}{
		{"over the bound", &http.MaxBytesError{Limit: 10}, 413, api.CodeStatementTooLarge},
		{"short of its Content-Length", io.ErrUnexpectedEOF, 400, api.CodeBadBody},
		{"bad chunked framing", errors.New("invalid byte in chunk length"), 400, api.CodeBadBody},
		{"read timed out", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, 400, api.CodeBadBody},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, 499, api.CodeCanceled},
		{"connection closed", fmt.Errorf("read: %w", net.ErrClosed), 499, api.CodeCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{c: Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}}
			r := httptest.NewRequest(http.MethodPost, "/entries", nil)
			status, code, detail, _ := s.bodyProblem(r, &bodyError{bound: bound, err: tc.err})
			if status != tc.status || code != tc.code || detail == "" {
				t.Errorf("%d %s %q, want %d %s", status, code, detail, tc.status, tc.code)
			}
			if l := logs.String(); strings.Count(l, "\n") != 1 || !strings.Contains(l, "level=DEBUG") {
				t.Errorf("log %q, want one DEBUG line", l)
			}
		})
	}
}
