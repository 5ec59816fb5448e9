package export

import (
	"archive/zip"
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
)

// TestBundleEntriesDatedAtExport lists exported bundles as `unzip -l` does: every entry of a
// chain bundle and of a case slice carries the export time (UTC), the manifest's created,
// never the zip format's zero date of 1980.
func TestBundleEntriesDatedAtExport(t *testing.T) {
	f := newFixture(t)
	const chain = "wsp_dated"
	f.ingest(t, chain, records(t, chain, 30))
	f.seal(t, chain)
	fixed := time.Date(2031, 7, 8, 9, 10, 12, 345_000_000, time.FixedZone("EST", -5*3600))
	for _, tc := range []struct {
		name   string
		now    func() time.Time // nil: the exporter's clock
		export func(x *Exporter, buf *bytes.Buffer) error
	}{
		{"chain, fixed clock", func() time.Time { return fixed }, func(x *Exporter, buf *bytes.Buffer) error {
			return x.Chains(context.Background(), buf, []Chain{{Chain: chain, Size: 30}})
		}},
		{"case slice, fixed clock", func() time.Time { return fixed }, func(x *Exporter, buf *bytes.Buffer) error {
			return x.Slice(context.Background(), buf, chain, Slice{Task: "tsk_1"})
		}},
		{"chain, real clock", nil, func(x *Exporter, buf *bytes.Buffer) error {
			return x.Chains(context.Background(), buf, []Chain{{Chain: chain, Size: 30}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.x.c
			c.Now = tc.now
			x := New(c)
			before := time.Now().UTC().Truncate(time.Second)
			var buf bytes.Buffer
			if err := tc.export(x, &buf); err != nil {
				t.Fatal(err)
			}
			after := time.Now().UTC()
			r, err := bundle.OpenZipBytes(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			created, err := time.Parse(time.RFC3339Nano, r.Manifest.Created)
			if err != nil {
				t.Fatalf("manifest created %q: %v", r.Manifest.Created, err)
			}
			want := created.Truncate(time.Second)
			if tc.now != nil && r.Manifest.Created != ledger.Timestamp(fixed) {
				t.Fatalf("manifest created %s, want the export time %s", r.Manifest.Created, ledger.Timestamp(fixed))
			}
			if tc.now == nil && (want.Before(before) || want.After(after)) {
				t.Fatalf("manifest created %s, not between %s and %s", want, before, after)
			}
			zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if len(zr.File) < 4 {
				t.Fatalf("only %d zip entries", len(zr.File))
			}
			for _, zf := range zr.File {
				if got := zf.Modified.UTC(); !got.Equal(want) {
					t.Errorf("%s: dated %s, want the export time %s", zf.Name, got, want)
				}
			}
		})
	}
}
