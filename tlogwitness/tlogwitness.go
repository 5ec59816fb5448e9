// Package tlogwitness holds the wire format of C2SP tlog-witness (https://c2sp.org/tlog-witness)
// that both sides of the protocol read: the add-checkpoint request body a log sends to a
// witness ("old N", up to 63 consistency proof lines, an empty line, the checkpoint note).
// The witness, the offline verifier and the proof-of-misbehaviour reader share it, so that
// they accept exactly the same bodies.
package tlogwitness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformed reports a body that is not an add-checkpoint request body.
var ErrMalformed = errors.New("malformed add-checkpoint request")

// MaxRequestSize bounds an add-checkpoint body: 63 proof lines, a checkpoint with extension
// lines and a few ML-DSA signatures fit easily.
const MaxRequestSize = 256 << 10

// MaxProofLines is the most consistency proof lines tlog-witness allows.
const MaxProofLines = 63

// SizeContentType is the media type of a 409 answer that carries the witness's tree size
// (the log then retries from that size); any other 409 refuses the checkpoint itself.
const SizeContentType = "text/x.tlog.size"

// Request is a parsed add-checkpoint body.
type Request struct {
	OldSize    uint64
	Proof      [][]byte
	Checkpoint []byte // the signed note, as sent
}

// ParseRequest parses an add-checkpoint body: "old N\n", up to 63 base64 hash lines, an
// empty line, then the checkpoint note. Its errors wrap ErrMalformed.
func ParseRequest(body []byte) (*Request, error) {
	if len(body) > MaxRequestSize {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrMalformed, MaxRequestSize)
	}
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("%w: no old size line", ErrMalformed)
	}
	num, ok := bytes.CutPrefix(line, []byte("old "))
	if !ok {
		return nil, fmt.Errorf("%w: first line is not \"old <size>\"", ErrMalformed)
	}
	old, err := ParseDecimal(string(num))
	if err != nil {
		return nil, fmt.Errorf("%w: old size: %v", ErrMalformed, err)
	}
	r := &Request{OldSize: old}
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("%w: no empty line before the checkpoint", ErrMalformed)
		}
		if len(line) == 0 {
			break
		}
		if len(r.Proof) == MaxProofLines {
			return nil, fmt.Errorf("%w: more than %d proof lines", ErrMalformed, MaxProofLines)
		}
		h, err := base64.StdEncoding.Strict().DecodeString(string(line))
		if err != nil || len(h) != 32 {
			return nil, fmt.Errorf("%w: proof line %d is not a base64 SHA-256 hash", ErrMalformed, len(r.Proof)+1)
		}
		r.Proof = append(r.Proof, h)
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: no checkpoint", ErrMalformed)
	}
	r.Checkpoint = rest
	return r, nil
}

// Marshal writes the request body (the inverse of ParseRequest).
func (r *Request) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", r.OldSize)
	for _, h := range r.Proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteByte('\n')
	b.Write(r.Checkpoint)
	return b.Bytes()
}

// ParseDecimal parses an ASCII decimal with no sign and no leading zeroes, as tlog-witness
// writes sizes.
func ParseDecimal(s string) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%.30q is not a decimal without leading zeroes", s)
	}
	return strconv.ParseUint(s, 10, 64)
}
