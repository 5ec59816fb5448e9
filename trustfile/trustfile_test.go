package trustfile_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/evident-log/evident/trustfile"
)

var update = flag.Bool("update", false, "rewrite the .summary golden files")

// TestGolden parses every file of testdata/valid, writes it back byte for byte, and compares
// its summary with the .summary golden file beside it.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.trust.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := trustfile.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			out, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, b) {
				t.Fatalf("Marshal(Parse(file)) differs from the file:\n%s", out)
			}
			keys, err := f.IssuerPublicKeys()
			if err != nil || len(keys) != len(f.IssuerKeys) {
				t.Fatalf("IssuerPublicKeys: %d keys, %v", len(keys), err)
			}
			// Checked returns what IssuerPublicKeys and Policy parse, from its one pass.
			ckeys, cpolicy, err := f.Checked()
			policy, perr := f.Policy()
			if err != nil || perr != nil || !reflect.DeepEqual(ckeys, keys) || fmt.Sprint(cpolicy) != fmt.Sprint(policy) {
				t.Fatalf("Checked: %d keys, policy %+v, %v; want %d keys, policy %+v", len(ckeys), cpolicy, err, len(keys), policy)
			}
			summary := strings.Join(f.Summary(), "\n") + "\n"
			golden := strings.TrimSuffix(name, ".trust.json") + ".summary"
			if *update {
				if err := os.WriteFile(golden, []byte(summary), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if summary != string(want) {
				t.Fatalf("summary:\n%s\nwant:\n%s", summary, want)
			}
		})
	}
}

// TestParseRefuses: every file of testdata/bad is refused with its kind of error and the
// member at fault.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		file   string
		kind   error
		member string
	}{
		{"format", trustfile.ErrFormat, "format"},
		{"no_format", trustfile.ErrFormat, "format"},
		{"unknown_member", trustfile.ErrSyntax, ""},
		{"duplicate_member", trustfile.ErrSyntax, ""},
		{"trailing", trustfile.ErrSyntax, ""},
		{"not_json", trustfile.ErrSyntax, ""},
		{"no_origin", trustfile.ErrOrigin, "origin"},
		{"origin_not_key_name", trustfile.ErrLogKey, "log_keys[0]"},
		{"no_log_key", trustfile.ErrLogKey, "log_keys"},
		{"log_key_twice", trustfile.ErrLogKey, "log_keys[1]"},
		{"log_key_same_hash", trustfile.ErrLogKey, "log_keys[1]"},
		{"log_key_hash", trustfile.ErrLogKey, "log_keys[0]"},
		{"log_key_mldsa_as_ed25519", trustfile.ErrLogKey, "log_keys[0]"},
		{"mldsa_key_ed25519", trustfile.ErrLogKey, "log_mldsa_keys[0]"},
		{"no_issuer_key", trustfile.ErrIssuerKey, "issuer_keys"},
		{"kid_not_thumbprint", trustfile.ErrIssuerKey, "issuer_keys[0]"},
		{"kid_twice", trustfile.ErrIssuerKey, "issuer_keys[1].kid"},
		{"cose_key_garbage", trustfile.ErrIssuerKey, "issuer_keys[0]"},
		{"window_reversed", trustfile.ErrIssuerKey, "issuer_keys[0]"},
		{"witness_policy", trustfile.ErrWitnessPolicy, "witness_policy"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata/bad", tc.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := trustfile.Parse(b)
			if f != nil || !errors.Is(err, tc.kind) {
				t.Fatalf("Parse: %v, want %v", err, tc.kind)
			}
			var te *trustfile.Error
			if !errors.As(err, &te) || te.Member != tc.member {
				t.Fatalf("error %v: member %q, want %q", err, te.Member, tc.member)
			}
		})
	}
	matches, _ := filepath.Glob("testdata/bad/*.json")
	if len(matches) != 20 {
		t.Fatalf("%d files in testdata/bad, the table lists 20", len(matches))
	}
}

// TestMarshalChecks: Marshal refuses a file that would not parse.
func TestMarshalChecks(t *testing.T) {
	f := &trustfile.File{Format: trustfile.Format, Origin: "log.example.org/evident"}
	if _, err := f.Marshal(); !errors.Is(err, trustfile.ErrLogKey) {
		t.Fatalf("Marshal without log keys: %v", err)
	}
	if _, err := trustfile.Parse(make([]byte, trustfile.MaxSize+1)); !errors.Is(err, trustfile.ErrSyntax) {
		t.Fatalf("Parse of an oversized file: %v", err)
	}
}

// FuzzParse: Parse never panics, and whatever it accepts writes back to a file it accepts
// again with the same content.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/valid/*.trust.json", "testdata/bad/*.json"} {
		files, _ := filepath.Glob(dir)
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := trustfile.Parse(b)
		if err != nil {
			var te *trustfile.Error
			if !errors.As(err, &te) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		out, err := tf.Marshal()
		if err != nil {
			t.Fatalf("accepted, then Marshal: %v", err)
		}
		again, err := trustfile.Parse(out)
		if err != nil {
			t.Fatalf("Marshal's output refused: %v", err)
		}
		out2, _ := again.Marshal()
		if !bytes.Equal(out, out2) {
			t.Fatal("Marshal is not stable")
		}
		_ = tf.Summary()
	})
}
