package canonical

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// envelope is a realistic CHAP envelope of about 600 bytes, members not in
// canonical order.
const envelope = `{"jsonrpc":"2.0","type":"notification","method":"participant.heartbeat",` +
	`"id":"01HZ9YWQ7K3X8M2V4N6P8R0T2A","ts":"2026-05-17T09:00:00.000Z",` +
	`"from":"human:alice@example.org","to":"service:coordinator@example.org",` +
	`"workspace":"wsp_test","chap":"0.3","seq":1042,` +
	`"params":{"status":"ready","load":"0.42","capabilities":["core/1.0","audit-scitt/1.0"],` +
	`"task":{"id":"tsk_7f3a9c","attempt":2,"deadline_ms":30000}},` +
	`"evidence":{"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},` +
	`"sig":"ed25519:k1:5VZDAMNgrHKQhuLMgG6CioSHfx645dl02HPgZSJJAVVfuIIVkKM7rMYeOXAc+bRr0lv18FlbviRlUUFDjnoQCw=="}`

func TestEnvelopeSize(t *testing.T) {
	if n := len(envelope); n < 550 || n > 650 {
		t.Fatalf("benchmark envelope is %d bytes, want about 600", n)
	}
	want, err := jcs.Transform([]byte(envelope))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Canonicalize([]byte(envelope), CHAP)
	if err != nil || string(got) != string(want) {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
}

func BenchmarkCanonicalizeEnvelope(b *testing.B) {
	in := []byte(envelope)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(in, CHAP); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseEnvelope(b *testing.B) {
	in := []byte(envelope)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(in, CHAP); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeEnvelope(b *testing.B) {
	v, err := Parse([]byte(envelope), CHAP)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = AppendEncode(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJCSTransformEnvelope is the reference implementation, for comparison.
func BenchmarkJCSTransformEnvelope(b *testing.B) {
	in := []byte(envelope)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jcs.Transform(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseDeep parses (and encodes) a value nested DefaultMaxDepth levels: the cost of
// the explicit stacks and the tree, per level (B/level, ns/level).
func BenchmarkParseDeep(b *testing.B) {
	in := []byte(deepDoc(DefaultMaxDepth))
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"Parse", func() error { _, err := Parse(in, CHAP); return err }},
		{"ParseEncode", func() error {
			v, err := Parse(in, CHAP)
			if err == nil {
				_, err = Encode(v)
			}
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/DefaultMaxDepth, "ns/level")
		})
	}
}

// BenchmarkMaxRecord takes a record of DefaultMaxSize bytes (a CHAP envelope whose draft is
// one long string) as ingest does: ParseCanonical with the cut of sig when the input is
// canonical, and Parse then EncodeSplit when it is not (here: one space after the brace).
// B/op is what it allocates beyond the input; peak-MiB is the heap in use at the end of the
// work, before the result is dropped.
func BenchmarkMaxRecord(b *testing.B) {
	head, tail := `{"draft":"`, `","method":"task.update","sig":"ed25519:k:AAAA"}`
	draft := strings.Repeat("The carrier confirms the parcel was scanned at the depot. ", DefaultMaxSize/58+1)
	canon := []byte(head + draft[:DefaultMaxSize-len(head)-len(tail)] + tail)
	// The same record with one space after the brace and one draft byte fewer: not canonical,
	// still at the limit.
	spaced := append(append([]byte("{ "), canon[1:len(canon)-len(tail)-1]...), tail...)
	for _, bc := range []struct {
		name string
		in   []byte
		run  func(in []byte) (any, error)
	}{
		{"ParseCanonical", canon, func(in []byte) (any, error) {
			v, c, ok, err := ParseCanonical(in, CHAP, "sig")
			if err == nil && (!ok || c.Without == nil) {
				b.Fatal("canonical input not recognised")
			}
			return []any{v, c}, err
		}},
		{"ParseEncodeSplit", spaced, func(in []byte) (any, error) {
			v, err := Parse(in, CHAP)
			if err != nil {
				return nil, err
			}
			full, without, err := EncodeSplit(nil, v.(*Object), "sig")
			return []any{v, full, without}, err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if len(bc.in) > DefaultMaxSize {
				b.Fatalf("input of %d bytes", len(bc.in))
			}
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			var peak uint64
			var ms runtime.MemStats
			for b.Loop() {
				out, err := bc.run(bc.in)
				if err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				runtime.KeepAlive(out)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}
