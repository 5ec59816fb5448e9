package log

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/tlogpolicy"
)

func TestLoadOrCreateMLDSAKey(t *testing.T) {
	dir := t.TempDir()
	s1, vk1, err := LoadOrCreateMLDSAKey(dir, "evident.test/log")
	if err != nil {
		t.Fatal(err)
	}
	s2, vk2, err := LoadOrCreateMLDSAKey(dir, "evident.test/log")
	if err != nil || vk1 != vk2 || s1.KeyHash() != s2.KeyHash() {
		t.Fatalf("reload: %v %q %q", err, vk1, vk2)
	}
	if postQuantumVKey([]note.Signer{s1}) != vk1 {
		t.Errorf("postQuantumVKey does not find the ML-DSA-44 signer")
	}
	// A signature by the signer verifies with the verifier key, as the offline verifier reads it.
	body := "evident.test/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	msg, err := note.Sign(&note.Note{Text: body}, s1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tlogpolicy.NewCosignatureVerifier(vk1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Errorf("ML-DSA-44 checkpoint signature does not verify: %v", err)
	}

	tests := []struct {
		name  string
		setup func(dir string)
		want  error
		msg   string
	}{
		{"other origin", func(string) {}, ErrKeyMismatch, ""},
		{"vkey not of the key", func(d string) {
			_, other, _ := GenerateMLDSAKey("evident.test/log")
			os.WriteFile(filepath.Join(d, MLDSAVerifierKeyFile), []byte(other+"\n"), 0o644)
		}, ErrKeyMismatch, ""},
		{"vkey without key", func(d string) { os.Remove(filepath.Join(d, MLDSAKeyFile)) }, nil, "refusing"},
		{"Ed25519 key in the file", func(d string) {
			sk, _, _ := GenerateKey("evident.test/log")
			os.WriteFile(filepath.Join(d, MLDSAKeyFile), []byte(sk+"\n"), 0o600)
		}, nil, "ML-DSA-44"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			if _, _, err := LoadOrCreateMLDSAKey(d, "evident.test/log"); err != nil {
				t.Fatal(err)
			}
			tc.setup(d)
			origin := "evident.test/log"
			if tc.name == "other origin" {
				origin = "other.test/log"
			}
			_, _, err := LoadOrCreateMLDSAKey(d, origin)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v", err)
			}
		})
	}
}

// subtreeMessage builds the message an ML-DSA-44 cosignature/v1 signature is over, as
// C2SP tlog-cosignature writes it (TLS presentation language): the label
// "subtree/v1\n\0", the cosigner name (one length byte), a big-endian uint64 timestamp, the
// log origin (one length byte), big-endian uint64 start and end, and the 32-byte root. It
// is written here from the spec, independently of the code under test.
func subtreeMessage(name string, timestamp uint64, origin string, start, end uint64, root []byte) []byte {
	var b bytes.Buffer
	b.WriteString("subtree/v1\n\x00")
	b.WriteByte(byte(len(name)))
	b.WriteString(name)
	binary.Write(&b, binary.BigEndian, timestamp)
	b.WriteByte(byte(len(origin)))
	b.WriteString(origin)
	binary.Write(&b, binary.BigEndian, start)
	binary.Write(&b, binary.BigEndian, end)
	b.Write(root)
	return b.Bytes()
}

// flipped returns a copy of b with byte i changed.
func flipped(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x80
	return c
}

// keyBytes returns the key bytes (type byte first) of a signed-note key, public or private.
func keyBytes(t *testing.T, key string) []byte {
	t.Helper()
	f := strings.SplitN(strings.TrimPrefix(key, "PRIVATE+KEY+"), "+", 3) // name+hash+base64
	b, err := base64.StdEncoding.DecodeString(f[len(f)-1])
	if len(f) != 3 || err != nil || len(b) < 2 || b[0] != 0x06 {
		t.Fatalf("%.40s… is not an ML-DSA-44 signed-note key (%v)", key, err)
	}
	return b
}

// TestMLDSASignatureFIPS204 checks the log's ML-DSA-44 checkpoint signature with an
// independent FIPS 204 implementation, cloudflare/circl: the key derived from the log's
// seed is the published one, circl verifies the signature over the tlog-cosignature
// message, and refuses it when one byte of the message or of the signature changes.
func TestMLDSASignatureFIPS204(t *testing.T) {
	const origin = "evident.test/log"
	skey, vkey, err := GenerateMLDSAKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, _, err := NewMLDSASigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	root := sha256.Sum256([]byte("a root"))
	text := fmt.Sprintf("%s\n%d\n%s\n", origin, 1234, base64.StdEncoding.EncodeToString(root[:]))
	signed, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(signed[len(text)+1:])) // "— <name> <base64>"
	raw, err := base64.StdEncoding.DecodeString(f[2])
	if len(f) != 3 || f[1] != origin || err != nil || len(raw) != 4+8+mldsa44.SignatureSize {
		t.Fatalf("signature line %q (%v)", signed[len(text):], err)
	}
	timestamp, sig := binary.BigEndian.Uint64(raw[4:12]), raw[12:]

	var seed [mldsa44.SeedSize]byte
	copy(seed[:], keyBytes(t, skey)[1:])
	fromSeed, _ := mldsa44.NewKeyFromSeed(&seed)
	if !bytes.Equal(fromSeed.Bytes(), keyBytes(t, vkey)[1:]) {
		t.Fatal("circl derives another public key from the log's seed than the published vkey's")
	}
	var pub mldsa44.PublicKey
	if err := pub.UnmarshalBinary(keyBytes(t, vkey)[1:]); err != nil {
		t.Fatal(err)
	}

	msg := subtreeMessage(origin, timestamp, origin, 0, 1234, root[:])
	for _, tc := range []struct {
		name     string
		msg, sig []byte
		want     bool
	}{
		{"as signed", msg, sig, true},
		{"one byte of the root changed", flipped(msg, len(msg)-1), sig, false},
		{"one byte of the tree size changed", flipped(msg, len(msg)-33), sig, false},
		{"one byte of the signature changed", msg, flipped(sig, len(sig)/2), false},
	} {
		if got := mldsa44.Verify(&pub, tc.msg, nil, tc.sig); got != tc.want {
			t.Errorf("%s: circl says %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMLDSASignatureByCirclAccepted is the reverse: a key generated by circl, and its
// signature made by circl over the tlog-cosignature message, written as a signed-note
// signature line, verify with tlogpolicy.NewCosignatureVerifier; one changed byte does not.
func TestMLDSASignatureByCirclAccepted(t *testing.T) {
	const name, origin, size = "witness.test/circl", "evident.test/log", 77
	pub, priv, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := append([]byte{0x06}, pub.Bytes()...)
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	vkey := fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(h[:4]), base64.StdEncoding.EncodeToString(key))
	v, err := tlogpolicy.NewCosignatureVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}

	root := sha256.Sum256([]byte("another root"))
	text := fmt.Sprintf("%s\n%d\n%s\n", origin, size, base64.StdEncoding.EncodeToString(root[:]))
	const timestamp = 1767225600
	sig := make([]byte, mldsa44.SignatureSize)
	if err := mldsa44.SignTo(priv, subtreeMessage(name, timestamp, origin, 0, size, root[:]), nil, true, sig); err != nil {
		t.Fatal(err)
	}
	line := func(sig []byte) string {
		raw := binary.BigEndian.AppendUint64(bytes.Clone(h[:4]), timestamp)
		return "— " + name + " " + base64.StdEncoding.EncodeToString(append(raw, sig...)) + "\n"
	}
	otherSize := strings.Replace(text, "\n77\n", "\n78\n", 1)
	for _, tc := range []struct {
		name string
		note string
		want bool
	}{
		{"as signed", text + "\n" + line(sig), true},
		{"one byte of the signature changed", text + "\n" + line(flipped(sig, 7)), false},
		{"another tree size", otherSize + "\n" + line(sig), false},
	} {
		_, err := note.Open([]byte(tc.note), note.VerifierList(v))
		if (err == nil) != tc.want {
			t.Errorf("%s: note.Open: %v, want verified %v", tc.name, err, tc.want)
		}
	}
}
