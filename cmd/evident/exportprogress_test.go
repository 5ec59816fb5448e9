package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/testinfra"
)

// TestExportProgressEntries: with a total announced the report counts entries; without, bytes.
func TestExportProgressEntries(t *testing.T) {
	data := testinfra.StreamedBundle(t, 2500)
	for _, tc := range []struct {
		name      string
		announced bool
		want      string
	}{
		{"entries", true, "export c: 2500/2500 entries (100%), "},
		{"bytes", false, fmt.Sprintf("export c: %s (", mib(float64(len(data))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, file bytes.Buffer
			e := &exportProgress{w: &file, out: &out, what: "export c"}
			if tc.announced {
				e.start(2500)
			}
			if _, err := io.Copy(e, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			e.end(nil)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if !bytes.Equal(file.Bytes(), data) || !strings.HasPrefix(lines[len(lines)-1], tc.want) {
				t.Errorf("wrote %d of %d bytes; report:\n%s", file.Len(), len(data), out.String())
			}
		})
	}
	var out bytes.Buffer
	e := &exportProgress{w: io.Discard, out: &out, quiet: true, what: "export c"}
	e.start(10)
	e.Write(data)
	e.end(nil)
	if out.Len() != 0 || e.count != nil {
		t.Errorf("quiet: %q, counter %v", out.String(), e.count)
	}
}
