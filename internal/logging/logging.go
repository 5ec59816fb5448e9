// Package logging builds the structured loggers of Evident's services: log/slog in text or
// JSON, with durations written as text ("1.5s") rather than as integer nanoseconds.
package logging

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// Formats accepted by New.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// ErrFormat is wrapped by New's refusal of an unknown format.
var ErrFormat = errors.New("log format: want text or json")

// New returns a logger writing to w in format (FormatText or FormatJSON).
func New(w io.Writer, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}
	switch format {
	case FormatText, "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w, not %q", ErrFormat, format)
}

// ReplaceAttr renders a time.Duration with its String method ("1.5s", "250ms"), so that
// both handlers print durations a reader can take in; every other attribute is unchanged.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
