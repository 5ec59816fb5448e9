package misbehaviour

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/evident-log/evident/ledger/strictjson"
)

// RefusalFormat is Refusal.Format for this version.
const RefusalFormat = "evident-witness-refusal/v1"

// MaxResponse bounds the witness answer a Refusal keeps as text: any proof within this
// package's limits (two checkpoints and MaxReferences references of MaxCheckpoint bytes each)
// fits whole.
const MaxResponse = 1 << 20

// Refusal is what a log keeps when a witness refuses the log's own checkpoint as
// contradicting the one the witness cosigned (tlog-witness: a 409 that is not a size
// answer, or a 422): either the log's key signed another history, or the witness is
// wrong. Proof is set when the witness answered with a proof of misbehaviour; a witness
// that does not (most do not) leaves only what was sent and answered.
type Refusal struct {
	Format   string `json:"format"`
	Witness  string `json:"witness"`  // the witness's name, or its URL when no name is known
	URL      string `json:"url"`      // where the checkpoint was posted
	Observed string `json:"observed"` // RFC 3339
	Status   int    `json:"status"`   // the HTTP status answered
	// Request is the add-checkpoint body the log sent.
	Request string `json:"request"`
	// Response is the body the witness answered, its first MaxResponse bytes.
	Response string `json:"response"`
	Proof    *Proof `json:"proof,omitempty"`
}

// NewRefusal records a witness's refusal of request. A response that is a proof of
// misbehaviour (read whole, up to MaxSize) is kept as Proof; the response's text is kept up
// to MaxResponse bytes.
func NewRefusal(witness, url string, status int, request, response []byte, observed time.Time) *Refusal {
	r := &Refusal{Format: RefusalFormat, Witness: witness, URL: url, Observed: observed.UTC().Format(time.RFC3339),
		Status: status, Request: string(request)}
	if p, err := Parse(response); err == nil {
		r.Proof = p
	}
	r.Response = string(response[:min(len(response), MaxResponse)])
	return r
}

// Marshal writes the refusal as indented JSON ending in a newline.
func (r *Refusal) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("misbehaviour: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseRefusal reads a refusal record strictly. Errors wrap ErrFormat.
func ParseRefusal(data []byte) (*Refusal, error) {
	var r Refusal
	if err := strictjson.Decode(data, &r, maxDepth, MaxSize); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if r.Format != RefusalFormat {
		return nil, fmt.Errorf("%w: format %.80q, want %q", ErrFormat, r.Format, RefusalFormat)
	}
	if r.Proof != nil {
		if err := r.Proof.validate(); err != nil {
			return nil, err
		}
	}
	return &r, nil
}
