package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDurationsAsText(t *testing.T) {
	for _, format := range []string{FormatText, FormatJSON} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := New(&buf, format)
			if err != nil {
				t.Fatal(err)
			}
			l.Info("request", "duration", 1500*time.Millisecond, "n", 3)
			out := buf.String()
			if format == FormatJSON {
				var m map[string]any
				if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
					t.Fatal(err)
				}
				if m["duration"] != "1.5s" || m["n"] != 3.0 {
					t.Fatalf("%s", out)
				}
				return
			}
			if !strings.Contains(out, "duration=1.5s") || !strings.Contains(out, "n=3") {
				t.Fatalf("%s", out)
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "xml"); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("got %v", err)
	}
}
