package bundle

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeBundle(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, name := range []string{LogKeyFile, "chains/wsp/entries.jsonl"} {
		if err := w.WriteFile(name, []byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(Manifest{Producer: "test", Created: "2026-01-01T00:00:00.000Z", Log: LogInfo{Origin: "o"},
		Chains: []ChainRef{{ID: "wsp", Dir: "wsp", Profile: "chap/0.3"}}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripZipAndDir(t *testing.T) {
	files := map[string]string{LogKeyFile: "o+1234+key\n", "chains/wsp/entries.jsonl": "{}\n"}
	z := writeBundle(t, files)
	r, err := OpenZipBytes(z)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest.Format != Format || len(r.Manifest.Files) != 2 {
		t.Fatalf("manifest %+v", r.Manifest)
	}
	for name, want := range files {
		got, err := r.ReadFile(name, 1<<20)
		if err != nil || string(got) != want {
			t.Fatalf("%s: %q %v", name, got, err)
		}
	}
	if got := r.List("chains/"); len(got) != 1 || got[0] != "chains/wsp/entries.jsonl" {
		t.Fatalf("List: %v", got)
	}
	// The same tree unpacked in a directory.
	dir := t.TempDir()
	zr, _ := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, b, 0o644)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A file the manifest does not list makes the directory ambiguous.
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644)
	var ae *AmbiguityError
	if _, err := Open(dir); !errors.As(err, &ae) || len(ae.Entries) != 1 || ae.Entries[0].Name != "extra.txt" {
		t.Fatalf("unlisted file: %v", err)
	}
	os.Remove(filepath.Join(dir, "extra.txt"))
	// A changed file fails its digest check at EOF.
	os.WriteFile(filepath.Join(dir, "chains/wsp/entries.jsonl"), []byte("{}\n{}\n"), 0o644)
	if _, err := d.ReadFile("chains/wsp/entries.jsonl", 1<<20); !errors.Is(err, ErrDigest) {
		t.Fatalf("altered file: %v", err)
	}
	if _, err := d.OpenFile("not/listed"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unlisted open: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	mk := func(manifest string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		if manifest != "" {
			f, _ := zw.Create(ManifestFile)
			f.Write([]byte(manifest))
		}
		zw.Close()
		return buf.Bytes()
	}
	// A damaged manifest.json: its stored bytes changed after the zip's checksum was taken.
	var stored bytes.Buffer
	zw := zip.NewWriter(&stored)
	f, _ := zw.CreateHeader(&zip.FileHeader{Name: ManifestFile, Method: zip.Store})
	f.Write([]byte(`{"format":"evident-bundle/v1"}`))
	zw.Close()
	damaged := stored.Bytes()
	damaged[bytes.Index(damaged, []byte("bundle/v1"))] ^= 0x20
	for _, tc := range []struct {
		name string
		zip  []byte
		want error
	}{
		{"not a zip", []byte("hello"), ErrFormat},
		{"no manifest", mk(""), ErrFormat},
		{"newer format", mk(`{"format":"evident-bundle/v2","only_in_v2":{"x":1}}`), ErrNewerFormat},
		{"much newer format", mk(`{"format":"evident-bundle/v10"}`), ErrNewerFormat},
		{"format v0", mk(`{"format":"evident-bundle/v0"}`), ErrManifest},
		{"format v01", mk(`{"format":"evident-bundle/v01"}`), ErrManifest},
		{"format v1.1", mk(`{"format":"evident-bundle/v1.1"}`), ErrManifest},
		{"other format", mk(`{"format":"evident-bundel/v1"}`), ErrManifest},
		{"no format", mk(`{"chains":[]}`), ErrManifest},
		{"unknown field", mk(`{"format":"evident-bundle/v1","surprise":1}`), ErrManifest},
		{"not json", mk(`{"format":`), ErrManifest},
		{"invalid UTF-8", mk("{\"format\":\"evident-bundle/v1\",\"producer\":\"\xff\"}"), ErrAmbiguous}, // readers differ on invalid UTF-8
		{"chain dir lies", mk(`{"format":"evident-bundle/v1","chains":[{"id":"a/b","dir":"a/b"}]}`), ErrManifest},
		{"damaged bytes", damaged, ErrManifest},
		{"duplicate key", mk(`{"format":"evident-bundle/v1","format":"evident-bundle/v1"}`), ErrAmbiguous},
	} {
		_, err := OpenZipBytes(tc.zip)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		for _, other := range []error{ErrFormat, ErrManifest, ErrNewerFormat, ErrAmbiguous} {
			if other != tc.want && errors.Is(err, other) {
				t.Errorf("%s: %v is also %v", tc.name, err, other)
			}
		}
	}
	var nf *NewerFormatError
	if _, err := OpenZipBytes(mk(`{"format":"evident-bundle/v2"}`)); !errors.As(err, &nf) || nf.Format != "evident-bundle/v2" ||
		!strings.Contains(err.Error(), `made by a newer Evident (format "evident-bundle/v2"`) || !strings.HasSuffix(err.Error(), ": upgrade") {
		t.Errorf("newer format: %v", err)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, bad := range []string{"../x", "/abs", "a/../b", "", "a\\b"} {
		if _, err := w.Create(bad); err == nil {
			t.Errorf("unsafe name %q accepted", bad)
		}
	}
	w.WriteFile("a", nil)
	if err := w.WriteFile("a", nil); err == nil {
		t.Error("duplicate file accepted")
	}
}

func TestChainDir(t *testing.T) {
	for id, want := range map[string]string{
		"wsp_support_triage":  "wsp_support_triage",
		"envelope:wf-1:env-9": "envelope%3Awf-1%3Aenv-9",
		"../etc":              "%2E.%2Fetc",
		".hidden":             "%2Ehidden",
		"a/b":                 "a%2Fb",
		"x y":                 "x%20y",
	} {
		if got := ChainDir(id); got != want {
			t.Errorf("ChainDir(%q) = %q, want %q", id, got, want)
		}
		if strings.ContainsAny(ChainDir(id), "/\\") {
			t.Errorf("ChainDir(%q) has a separator", id)
		}
	}
}

// FuzzOpenZip: arbitrary bytes never panic the reader, and whatever opens has a valid manifest.
func FuzzOpenZip(f *testing.F) {
	f.Add(writeBundle(f, map[string]string{LogKeyFile: "k", "chains/wsp/entries.jsonl": "{}"}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := OpenZipBytes(b)
		if err != nil {
			return
		}
		if r.Manifest.Format != Format {
			t.Fatalf("opened with format %q", r.Manifest.Format)
		}
		for name := range r.Manifest.Files {
			r.ReadFile(name, 1<<20)
		}
	})
}
