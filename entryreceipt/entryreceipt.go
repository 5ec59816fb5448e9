// Package entryreceipt reads, writes and verifies entry receipts (format
// evident-entry-receipt/v1, docs/entry-receipt.md): one JSON object that proves offline, with
// only the operator's trust file, that a record sits at a position of a chain whose root a
// seal commits to, and that the seal is in the transparency log under a checkpoint the log
// signed and its witnesses cosigned.
package entryreceipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/evident-log/evident/ledger/strictjson"
	"github.com/evident-log/evident/receipts"
)

// Format is the value of the format member of an entry receipt.
const Format = "evident-entry-receipt/v1"

// formatPrefix is what every entry receipt format begins with; a later version differs after it.
const formatPrefix = "evident-entry-receipt/"

// MaxSize bounds an encoded entry receipt: an entry statement of the largest record in base64,
// its seal and checkpoint.
const MaxSize = receipts.MaxEntryStatementSize/3*4 + 1<<20

var (
	// ErrMalformed means the object is not an entry receipt: bad JSON, unknown or missing
	// members, bad base64, a statement that does not parse.
	ErrMalformed = errors.New("malformed entry receipt")
	// ErrNewerFormat means the receipt names a later format than this reader knows.
	ErrNewerFormat = errors.New("entry receipt made by a newer Evident: upgrade")
)

// Receipt is an entry receipt. Statement and Seal are COSE bytes (base64 in JSON).
type Receipt struct {
	// Format is always Format.
	Format string `json:"format"`
	// Chain is the chain id; Seq the entry's position in it, from 0.
	Chain string `json:"chain"`
	Seq   uint64 `json:"seq"`
	// Statement is the entry statement with its chain receipt in header 394.
	Statement []byte `json:"statement"`
	// Seal is the seal statement with its log receipt in header 394.
	Seal []byte `json:"seal"`
	// Checkpoint is the signed checkpoint note the log receipt was cut from, with its
	// cosignatures.
	Checkpoint string `json:"checkpoint"`
}

// Parse reads an entry receipt strictly: valid UTF-8 JSON, no duplicate or unknown member,
// every member present, nothing after the object, at most MaxSize bytes. A receipt of a later
// format is refused with ErrNewerFormat; anything else wrong with ErrMalformed.
func Parse(b []byte) (*Receipt, error) {
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrMalformed, len(b), MaxSize)
	}
	// The format is read first, on its own, so that a later version's members are not
	// reported as unknown.
	var head struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(b, &head); err == nil && head.Format != Format && strings.HasPrefix(head.Format, formatPrefix) {
		return nil, fmt.Errorf("%w (format %.60q; this one reads %s)", ErrNewerFormat, head.Format, Format)
	}
	var r Receipt
	if err := strictjson.Decode(b, &r, 4, MaxSize); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if r.Format != Format {
		return nil, fmt.Errorf("%w: format %.60q, want %q", ErrMalformed, r.Format, Format)
	}
	if r.Chain == "" || len(r.Statement) == 0 || len(r.Seal) == 0 || r.Checkpoint == "" {
		return nil, fmt.Errorf("%w: chain, statement, seal and checkpoint are required", ErrMalformed)
	}
	return &r, nil
}

// Marshal encodes the receipt with its members in the documented order.
func (r *Receipt) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("entry receipt: %w", err)
	}
	return buf.Bytes(), nil
}
