package canonical

import (
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
