package witness

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func TestParseRequestRejects(t *testing.T) {
	h := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	cp := "log.test\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— log.test AAAA\n"
	many := ""
	for i := 0; i < 64; i++ {
		many += h
	}
	for _, tc := range []struct{ name, body string }{
		{"empty", ""},
		{"no old line", "\n" + cp},
		{"negative", "old -1\n\n" + cp},
		{"leading zero", "old 00\n\n" + cp},
		{"plus sign", "old +1\n\n" + cp},
		{"space", "old  1\n\n" + cp},
		{"no empty line", "old 1\n" + h},
		{"short hash", "old 1\nAAAA\n\n" + cp},
		{"non-canonical base64", "old 1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n\n" + cp},
		{"64 proof lines", "old 1\n" + many + "\n" + cp},
		{"no checkpoint", "old 1\n\n"},
		{"too big", "old 1\n\n" + string(bytes.Repeat([]byte("x"), MaxRequestSize))},
	} {
		if _, err := ParseRequest([]byte(tc.body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", tc.name, err)
		}
	}
	r, err := ParseRequest([]byte("old 0\n\n" + cp))
	if err != nil || r.OldSize != 0 || len(r.Proof) != 0 || string(r.Checkpoint) != cp {
		t.Fatalf("valid request: %+v %v", r, err)
	}
}

func TestConfig(t *testing.T) {
	b, err := os.ReadFile("testdata/logs.conf")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Logs) != 2 || c.Logs[0].Origin != "evident.localhost/log" || len(c.Logs[1].VKeys) != 2 {
		t.Fatalf("parsed %+v", c.Logs)
	}
	c2, err := ParseConfig([]byte(c.String()))
	if err != nil || c2.String() != c.String() {
		t.Fatalf("round trip: %v\n%s", err, c2.String())
	}
	for _, bad := range []string{
		"log evident.localhost/log\n",
		"logs a a+01234567+AQ==\n",
		"log a notakey\n",
		"log a " + c.Logs[0].VKeys[0] + "\nlog a " + c.Logs[0].VKeys[0] + "\n",
	} {
		if _, err := ParseConfig([]byte(bad)); !errors.Is(err, ErrConfig) {
			t.Errorf("%q: err %v, want ErrConfig", bad, err)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("old 0\n\nlog.test\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— log.test AAAA\n"))
	f.Add([]byte("old 5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\nx\n"))
	f.Add([]byte("old 18446744073709551615\n\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if err != nil {
			return
		}
		if got := r.Marshal(); !bytes.Equal(got, b) {
			t.Fatalf("Marshal(ParseRequest(b)) = %q, want %q", got, b)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	b, err := os.ReadFile("testdata/logs.conf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("log a a+01234567+AQ==\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		c2, err := ParseConfig([]byte(c.String()))
		if err != nil || c2.String() != c.String() {
			t.Fatalf("round trip: %v", err)
		}
	})
}
