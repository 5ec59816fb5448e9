package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// LinkPrefix names the hash algorithm of every link; a link always carries it.
const LinkPrefix = "sha256:"

// ErrMalformedLink reports text that is not "sha256:" followed by 64 lowercase hex digits.
var ErrMalformedLink = errors.New("malformed link")

// Link is a chain link: the SHA-256 over a record's canonical bytes and the previous link's text.
type Link [sha256.Size]byte

// Genesis is link(-1), the predecessor of a chain's first record.
var Genesis Link

// NextLink computes link(i) from the canonical bytes of record i and link(i-1).
func NextLink(canonical []byte, prev Link) Link {
	// A record of common size is hashed in one call on a stack copy: no hash.Hash and no
	// sum escape to the heap, once per link of every ingest and replay.
	var small [2048]byte
	if len(canonical) <= len(small)-linkTextSize {
		return sha256.Sum256(prev.appendText(append(small[:0], canonical...)))
	}
	var buf [linkTextSize]byte
	h := sha256.New()
	h.Write(canonical)
	h.Write(prev.appendText(buf[:0]))
	var l Link
	h.Sum(l[:0])
	return l
}

// linkTextSize is the length of a link's text, "sha256:" and 64 hex digits.
const linkTextSize = len(LinkPrefix) + 2*sha256.Size

func (l Link) appendText(dst []byte) []byte {
	dst = append(dst, LinkPrefix...)
	return hex.AppendEncode(dst, l[:])
}

// String returns the link as "sha256:<hex>".
func (l Link) String() string { return string(l.appendText(nil)) }

// IsZero reports whether l is the genesis link.
func (l Link) IsZero() bool { return l == Genesis }

// AppendText implements encoding.TextAppender: it appends "sha256:<hex>" to b.
func (l Link) AppendText(b []byte) ([]byte, error) { return l.appendText(b), nil }

// MarshalText implements encoding.TextMarshaler.
func (l Link) MarshalText() ([]byte, error) { return l.appendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it writes l only when the whole text is valid.
func (l *Link) UnmarshalText(b []byte) error {
	v, err := ParseLinkBytes(b)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// ParseLink parses "sha256:<64 lowercase hex>".
func ParseLink(s string) (Link, error) { return parseLink(s) }

// ParseLinkBytes is ParseLink of the text in b, read in place.
func ParseLinkBytes(b []byte) (Link, error) { return parseLink(b) }

func parseLink[T string | []byte](s T) (Link, error) {
	if len(s) != len(LinkPrefix)+2*sha256.Size || string(s[:len(LinkPrefix)]) != LinkPrefix {
		return Link{}, fmt.Errorf("%w: %.80q", ErrMalformedLink, string(s))
	}
	var l Link
	h := s[len(LinkPrefix):]
	for i := range l {
		hi, lo := lowerHex[h[2*i]], lowerHex[h[2*i+1]]
		if hi|lo > 0xf {
			return Link{}, fmt.Errorf("%w: %.80q (hex must be lowercase)", ErrMalformedLink, string(s))
		}
		l[i] = hi<<4 | lo
	}
	return l, nil
}

// lowerHex maps the digits 0-9 and a-f to their values and every other byte to 0xff.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		switch c := byte(i); {
		case '0' <= c && c <= '9':
			t[i] = c - '0'
		case 'a' <= c && c <= 'f':
			t[i] = c - 'a' + 10
		default:
			t[i] = 0xff
		}
	}
	return t
}()

// Digest returns "sha256:<hex>" of b: the form every content hash takes in Evident's JSON.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return Link(s).String()
}
