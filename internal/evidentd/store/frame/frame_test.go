package frame

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, p := range [][]byte{{0}, []byte("a record"), bytes.Repeat([]byte{0xff}, 70000)} {
		f := Append([]byte("prefix"), p)[len("prefix"):]
		if len(f) != Header+len(p) {
			t.Fatalf("frame of %d bytes holds %d", len(p), len(f))
		}
		got, ok := Parse(append(f, "trailing"...))
		if !ok || !bytes.Equal(got, p) {
			t.Fatalf("Parse = %q, %v; want the payload back", got[:min(len(got), 16)], ok)
		}
		if cap(got) != len(got) {
			t.Fatalf("payload's capacity %d reaches past it (%d)", cap(got), len(got))
		}
	}
}

// TestRefuses holds Parse to refusing every frame that is torn or altered.
func TestRefuses(t *testing.T) {
	good := Append(nil, []byte("payload bytes"))
	cases := map[string][]byte{
		"empty":        nil,
		"header only":  good[:Header],
		"torn payload": good[:len(good)-1],
		"zero length": func() []byte {
			b := binary.LittleEndian.AppendUint32(nil, 0)
			return append(b, make([]byte, 8)...)
		}(),
	}
	for i := range good { // every single flipped bit is caught
		b := bytes.Clone(good)
		b[i] ^= 0x10
		cases["flip at "+string(rune('A'+i%26))+string(rune('0'+i/26))] = b
	}
	// A length past the bound, with its own CRC right, is refused before anything is read.
	over := binary.LittleEndian.AppendUint32(nil, MaxPayload+1)
	over = binary.LittleEndian.AppendUint32(over, crc32.Checksum(over, castagnoli))
	cases["over the bound"] = append(over, make([]byte, 4+64)...)
	for name, b := range cases {
		if p, ok := Parse(b); ok {
			t.Errorf("%s: Parse accepted %q", name, p)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Append(nil, []byte("a record")))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := Parse(b)
		if !ok {
			return
		}
		if !bytes.Equal(Append(nil, p), b[:Header+len(p)]) {
			t.Fatalf("accepted a frame that is not Append's encoding of its payload")
		}
	})
}
