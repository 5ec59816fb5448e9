package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/evident-log/evident/ledger/strictjson"
)

// SealContentType is the COSE content type of a seal statement's payload.
const SealContentType = "application/evident-seal+json;version=1"

// Seal commits a chain's state into the log (docs/chains.md, "Seals"). Its JSON, canonicalised
// with JCS, is the payload of the seal statement.
type Seal struct {
	Chain    string `json:"chain"`
	Profile  string `json:"profile"`
	Size     uint64 `json:"size"`
	Head     Link   `json:"head"`
	Root     string `json:"root"`      // "sha256:<hex>" of the chain tree root at Size
	Closed   bool   `json:"closed"`    // no record is accepted after a closing seal
	PrevSeal string `json:"prev_seal"` // "sha256:<hex>" of the previous seal statement's log entry, "" for the first
	SealedAt string `json:"sealed_at"` // RFC 3339 UTC, millisecond precision
}

// Canonical returns the JCS bytes of the seal.
func (s Seal) Canonical() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return jcs.Transform(b)
}

// ParseSeal decodes a seal payload, refusing unknown fields.
func ParseSeal(b []byte) (Seal, error) {
	var s Seal
	if err := strictjson.Decode(b, &s, 4, 64<<10); err != nil {
		return Seal{}, fmt.Errorf("seal payload: %w", err)
	}
	if _, err := time.Parse(time.RFC3339Nano, s.SealedAt); err != nil {
		return Seal{}, fmt.Errorf("seal payload: sealed_at: %w", err)
	}
	return s, nil
}

// RootString renders a tree root the way seals and bundles carry it.
func RootString(root [32]byte) string { return Link(root).String() }

// Timestamp renders t the way Evident writes times: RFC 3339, UTC, milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
