package bundle

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger/strictjson"
)

// The scitt/ section of a bundle holds SCITT registrations made through SCRAPI (POST
// /entries) so that a verifier can replay each registration decision offline (RFC 9943
// replayability): every registered statement as a transparent statement with its receipt,
// and every registration policy statement the service ever put in force, with its
// receipt and the interval of the log during which it was in force.
//
//	scitt/registrations.json         the index (SCITTIndex, format "evident-scitt-registrations/v1")
//	scitt/policies/<n>.cose          transparent policy statements, n = 000000, 000001, … in log order
//	scitt/statements/<id>.cose       transparent registered statements; id = hex log entry
const (
	SCITTIndexFile = "scitt/registrations.json"
	SCITTFormat    = "evident-scitt-registrations/v1"
)

// ErrSCITTIndex reports a scitt/registrations.json that does not parse or contradicts itself.
var ErrSCITTIndex = errors.New("invalid scitt/registrations.json")

// SCITTPolicyFile returns the path of the n-th registration policy statement.
func SCITTPolicyFile(n int) string { return fmt.Sprintf("scitt/policies/%06d.cose", n) }

// SCITTStatementFile returns the path of a registered statement by its id (hex log entry).
func SCITTStatementFile(id string) string { return "scitt/statements/" + id + ".cose" }

// SCITTIndex lists the registrations of the scitt/ section.
type SCITTIndex struct {
	Format string `json:"format"`
	// Selection is what was exported: "all", or the CWT iss of one issuer.
	Selection string `json:"selection"`
	// Policies are every registration policy statement in the log, in log order.
	Policies []SCITTPolicy `json:"policies"`
	// Statements are the registered statements selected, in log order.
	Statements []SCITTStatement `json:"statements"`
}

// SCITTPolicy is one registration policy statement and when it was in force.
type SCITTPolicy struct {
	// ID is the hex log entry of the policy statement (the policy id registrations name).
	ID   string `json:"id"`
	File string `json:"file"`
	// LogIndex is the policy statement's index in the log.
	LogIndex uint64 `json:"log_index"`
	// InForce is when the policy decided registrations.
	InForce SCITTInterval `json:"in_force"`
}

// SCITTInterval is the validity interval of a policy: from its own log entry up to (not
// including) the next policy's, and in time from its statement's iat up to the next
// policy's iat. Until and UntilIndex are absent for the policy still in force at export.
type SCITTInterval struct {
	FromIndex  uint64  `json:"from_index"`
	UntilIndex *uint64 `json:"until_index,omitempty"`
	From       string  `json:"from"`
	Until      string  `json:"until,omitempty"`
}

// SCITTStatement is one registered statement.
type SCITTStatement struct {
	// ID is the hex log entry of the statement.
	ID   string `json:"id"`
	File string `json:"file"`
	// Issuer is the statement's CWT iss.
	Issuer string `json:"issuer"`
	// Policy is the id of the policy statement the registration passed.
	Policy string `json:"policy"`
	// LogIndex is the statement's index in the log.
	LogIndex uint64 `json:"log_index"`
}

// ParseSCITTIndex reads scitt/registrations.json strictly: known fields only, the format,
// hex ids, the file names the format prescribes, policies in log order with intervals that
// follow one another, statements naming a listed policy, no id twice.
func ParseSCITTIndex(b []byte) (*SCITTIndex, error) {
	var x SCITTIndex
	if err := strictjson.Decode(b, &x, 8, maxJSONFile); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSCITTIndex, err)
	}
	if err := x.Check(); err != nil {
		return nil, err
	}
	return &x, nil
}

// Check validates the index.
func (x *SCITTIndex) Check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrSCITTIndex, fmt.Sprintf(format, a...))
	}
	if x.Format != SCITTFormat {
		return bad("format %q, want %q", x.Format, SCITTFormat)
	}
	if x.Selection == "" {
		return bad("no selection")
	}
	ids := map[string]bool{}
	for i, p := range x.Policies {
		if !hexID(p.ID) || ids[p.ID] {
			return bad("policy %d: id %.80q is not a new hex SHA-256", i, p.ID)
		}
		ids[p.ID] = true
		if p.File != SCITTPolicyFile(i) {
			return bad("policy %d: file %.80q, want %s", i, p.File, SCITTPolicyFile(i))
		}
		if p.InForce.FromIndex != p.LogIndex {
			return bad("policy %d: in force from log index %d, but it is at %d", i, p.InForce.FromIndex, p.LogIndex)
		}
		from, err := time.Parse(time.RFC3339, p.InForce.From)
		if err != nil {
			return bad("policy %d: from: %v", i, err)
		}
		last := i == len(x.Policies)-1
		if last != (p.InForce.UntilIndex == nil) || last != (p.InForce.Until == "") {
			return bad("policy %d: only the last policy is open-ended", i)
		}
		if last {
			continue
		}
		next := x.Policies[i+1]
		if *p.InForce.UntilIndex != next.LogIndex || next.LogIndex <= p.LogIndex {
			return bad("policy %d: in force until log index %d, but the next policy is at %d", i, *p.InForce.UntilIndex, next.LogIndex)
		}
		until, err := time.Parse(time.RFC3339, p.InForce.Until)
		if err != nil || until.Before(from) || p.InForce.Until != next.InForce.From {
			return bad("policy %d: in force until %.40q, the next policy from %.40q", i, p.InForce.Until, next.InForce.From)
		}
	}
	for i, s := range x.Statements {
		if !hexID(s.ID) || ids[s.ID] {
			return bad("statement %d: id %.80q is not a new hex SHA-256", i, s.ID)
		}
		ids[s.ID] = true
		if s.File != SCITTStatementFile(s.ID) {
			return bad("statement %d: file %.80q, want %s", i, s.File, SCITTStatementFile(s.ID))
		}
		if s.Issuer == "" {
			return bad("statement %d: no issuer", i)
		}
		if i > 0 && s.LogIndex <= x.Statements[i-1].LogIndex {
			return bad("statement %d: not in log order", i)
		}
		known := false
		for _, p := range x.Policies {
			known = known || p.ID == s.Policy
		}
		if !known {
			return bad("statement %d names policy %.80q, which the index does not list", i, s.Policy)
		}
	}
	return nil
}

func hexID(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && strings.ToLower(s) == s
}

// Marshal encodes the index as indented JSON.
func (x *SCITTIndex) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
