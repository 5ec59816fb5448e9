package verifier

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/evident-log/evident/misbehaviour"
)

// ReportFormat is the format string of the JSON report this version writes.
const ReportFormat = "evident-verify-report/v1"

// Status is the verdict of one check, or of a whole report.
type Status string

// The three verdicts. A check is Verified only when the property it names was
// checked and holds; NotEvaluated says something could not be checked (and why);
// Broken says the bundle contradicts itself or its signatures.
const (
	Verified     Status = "verified"
	NotEvaluated Status = "not_evaluated"
	Broken       Status = "broken"
)

// Check is one named verdict (docs/report.md).
type Check struct {
	Name   CheckName `json:"name"`
	Chain  string    `json:"chain,omitempty"`
	Status Status    `json:"status"`
	// Code is a stable machine-readable reason for a broken or not evaluated check
	// (a ledger refusal code such as "prev_hash_mismatch", a profile's code, or one of the
	// verifier's Code constants).
	Code   Code   `json:"code,omitempty"`
	Detail string `json:"detail"`
	// Where locates the finding: "file:line", "seq N", "seal N", a file name.
	Where    string   `json:"where,omitempty"`
	Evidence []string `json:"evidence,omitempty"`
}

// Coverage says how much of a chain was actually checked.
type Coverage struct {
	EntriesTotal       uint64 `json:"entries_total"`       // lines in entries.jsonl
	EntriesChecked     uint64 `json:"entries_checked"`     // entries replayed (up to and including the first break in sequence)
	EntriesUnchecked   uint64 `json:"entries_unchecked"`   // entries after a break, not replayed
	CheckedFromSeq     uint64 `json:"checked_from_seq"`    // first seq replayed (0: from genesis)
	SignaturesVerified uint64 `json:"signatures_verified"` // record signatures that verified
	Unsigned           uint64 `json:"unsigned"`            // replayed records with no signature that a sender could have signed
	Unsignable         uint64 `json:"unsignable"`          // replayed records the protocol has nobody sign (CHAP recorded refusals)
	EntriesAnchored    uint64 `json:"entries_anchored"`    // entries covered by a verified seal
	SealsTotal         uint64 `json:"seals_total"`
	SealsVerified      uint64 `json:"seals_verified"`
	Checkpoints        uint64 `json:"checkpoints"` // distinct verified checkpoints the chain's seal receipts lead to
}

// KeyReport is one participant key as the chain's own key history has it.
type KeyReport struct {
	Kid     string `json:"kid"`
	From    string `json:"from,omitempty"`
	Until   string `json:"until,omitempty"`
	Revoked bool   `json:"revoked,omitempty"`
}

// Participant is a chain participant with its key history (replayed, not trusted from the bundle).
type Participant struct {
	URI  string      `json:"uri"`
	Role string      `json:"role,omitempty"`
	Keys []KeyReport `json:"keys"`
}

// ChainReport is the recomputed state of one chain.
type ChainReport struct {
	ID           string        `json:"id"`
	Profile      string        `json:"profile"`
	Size         uint64        `json:"size"` // replayed size
	Head         string        `json:"head"` // replayed head link
	Root         string        `json:"root"` // replayed chain tree root
	Coverage     Coverage      `json:"coverage"`
	Participants []Participant `json:"participants,omitempty"`
	// Linkage is how much of the chain the records' own predecessor links cover (CHAP
	// evidence.prev_hash); nil for profiles whose records name no predecessor.
	Linkage *Linkage `json:"linkage,omitempty"`
}

// CheckpointReport is one log checkpoint the bundle holds (as a file or inside a receipt).
type CheckpointReport struct {
	Size    uint64   `json:"size"`
	Root    string   `json:"root"` // "sha256:<hex>"
	Status  Status   `json:"status"`
	Sources []string `json:"sources"`
}

// LogReport describes the transparency log the seals are registered in.
type LogReport struct {
	Origin      string             `json:"origin"`
	Key         string             `json:"key,omitempty"` // verifier key name+hash from trust/log.vkey
	Checkpoints []CheckpointReport `json:"checkpoints"`
}

// Report is the outcome of verifying one bundle: the JSON form is ReportFormat, documented
// field by field in docs/report.md.
type Report struct {
	Format  string `json:"format"`
	Bundle  string `json:"bundle"` // what was verified; callers may overwrite it with a path
	Verdict Status `json:"verdict"`
	// Hint says how to pin trust when a trust.* check is not evaluated for want of a pin
	// (code trust_not_pinned); empty otherwise.
	Hint      string        `json:"hint,omitempty"`
	Checks    []Check       `json:"checks"`
	Chains    []ChainReport `json:"chains"`
	Log       LogReport     `json:"log"`
	Generated string        `json:"generated"`
	// Verifier names the build of the verifier that wrote the report (buildinfo), e.g.
	// "evident v0.3.1 (rev 1a2b3c4d5e6f, 2026-05-17T09:00:00Z, go1.26.8)".
	Verifier string `json:"verifier,omitempty"`
	// Misbehaviour holds a proof of misbehaviour (docs/misbehaviour.md) for every pair of
	// checkpoints signed by the log that cannot both be true (log.fork, log.consistency
	// inconsistent): anyone holding the log's key can check one offline, without the bundle.
	Misbehaviour []*misbehaviour.Proof `json:"misbehaviour,omitempty"`
	// Story is what the replay of each CHAP chain found (story.go): the verdict's second
	// axis, set by the caller that replays the chains (evident verify and replay); absent
	// when nothing was replayed.
	Story []Story `json:"story,omitempty"`
	// NotEvidence lists what the bundle states that nothing binds and no check relies on
	// (the manifest's producer and created, a slice's scope): shown so that no one takes it
	// for verified. Absent from a report on a bundle refused at open.
	NotEvidence []NotEvidence `json:"not_evidence,omitempty"`
}

// Fold folds checks into one verdict: broken if any is broken, else not_evaluated if any is
// (or has no known status), else verified. No checks at all is not_evaluated. It is the
// report's verdict over all checks, and a chain's over the checks that name it.
func Fold(checks []Check) Status {
	if len(checks) == 0 {
		return NotEvaluated
	}
	v := Verified
	for _, c := range checks {
		switch c.Status {
		case Broken:
			return Broken
		case Verified:
		default:
			v = NotEvaluated
		}
	}
	return v
}

// Count returns how many of the report's checks have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

// ExitCode maps the verdict to a process exit code: 0 verified, 1 broken, 2 not evaluated.
func (r *Report) ExitCode() int {
	switch r.Verdict {
	case Verified:
		return 0
	case Broken:
		return 1
	default:
		return 2
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func mark(s Status) string {
	switch s {
	case Verified:
		return "✓"
	case Broken:
		return "✗"
	default:
		return "?"
	}
}

// safe renders text that came from the bundle so it cannot forge report lines or
// drive a terminal: control and format characters are escaped, length is bounded.
func safe(s string) string {
	const maxLen = 512
	var b strings.Builder
	for i, r := range s {
		if i >= maxLen {
			b.WriteString("…")
			break
		}
		switch {
		case r == unicode.ReplacementChar:
			b.WriteString(`\ufffd`)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// WriteText writes a human-readable report: the verdict first, then every check
// (✓ verified, ? not evaluated, ✗ broken), then coverage per chain and the log's checkpoints.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("VERDICT: %s\n", r.VerdictLine())
	switch r.Verdict {
	case Verified:
		ew.printf("  every check passed\n")
	case Broken:
		ew.printf("  %d check(s) broken\n", r.Count(Broken))
	default:
		ew.printf("  nothing broken, but %d check(s) not evaluated\n", r.Count(NotEvaluated))
	}
	if ew.err == nil {
		ew.err = r.writeStory(w)
	}
	if r.Hint != "" {
		ew.printf("  %s\n", safe(r.Hint))
	}
	ew.printf("bundle: %s\n", safe(r.Bundle))
	ew.printf("generated: %s\n", safe(r.Generated))
	if r.Verifier != "" {
		ew.printf("verifier: %s\n", safe(r.Verifier))
	}
	if len(r.NotEvidence) > 0 {
		ew.printf("not evidence (stated by the bundle, bound by nothing, relied on by no check):\n")
		for _, n := range r.NotEvidence {
			ew.printf("  %s: %q — %s\n", safe(n.Field), n.Value, safe(n.Why))
		}
	}
	ew.printf("\n")
	for _, c := range r.Checks {
		ew.printf("%s %s", mark(c.Status), safe(string(c.Name)))
		if c.Chain != "" {
			ew.printf(" [%s]", safe(c.Chain))
		}
		if c.Where != "" {
			ew.printf(" @ %s", safe(c.Where))
		}
		if c.Code != "" {
			ew.printf(" (%s)", safe(string(c.Code)))
		}
		ew.printf(": %s\n", safe(c.Detail))
		for _, e := range c.Evidence {
			ew.printf("    - %s\n", safe(e))
		}
	}
	for _, c := range r.Chains {
		cv := c.Coverage
		ew.printf("\nchain %s (%s)\n", safe(c.ID), safe(c.Profile))
		ew.printf("  size %d, head %s, root %s\n", c.Size, safe(c.Head), safe(c.Root))
		ew.printf("  entries: %d total, %d checked (from seq %d), %d unchecked\n", cv.EntriesTotal, cv.EntriesChecked, cv.CheckedFromSeq, cv.EntriesUnchecked)
		if l := c.Linkage; l != nil {
			ew.printf("  linkage (the Coordinator's chain): entries_total %d, entries_checked %d, entries_unchecked %d (unchained prefix), entries_named %d, checked_from_seq %d\n",
				l.EntriesTotal, l.EntriesChecked, l.EntriesUnchecked, l.EntriesNamed, l.CheckedFromSeq)
		}
		ew.printf("  signatures: %d verified, %d unsigned, %d signed by nobody by design (recorded refusals)\n", cv.SignaturesVerified, cv.Unsigned, cv.Unsignable)
		ew.printf("  seals: %d of %d verified, %d entries anchored, %d checkpoint(s)\n", cv.SealsVerified, cv.SealsTotal, cv.EntriesAnchored, cv.Checkpoints)
		for _, p := range c.Participants {
			ew.printf("  participant %s", safe(p.URI))
			if p.Role != "" {
				ew.printf(" (%s)", safe(p.Role))
			}
			ew.printf(":")
			for _, k := range p.Keys {
				ew.printf(" %s[%s..%s", safe(k.Kid), safe(orDash(k.From)), safe(orDash(k.Until)))
				if k.Revoked {
					ew.printf(" revoked")
				}
				ew.printf("]")
			}
			ew.printf("\n")
		}
	}
	ew.printf("\nlog %s", safe(r.Log.Origin))
	if r.Log.Key != "" {
		ew.printf(" (key %s)", safe(r.Log.Key))
	}
	ew.printf("\n")
	for _, cp := range r.Log.Checkpoints {
		ew.printf("  %s checkpoint size %d root %s (%s)\n", mark(cp.Status), cp.Size, safe(cp.Root), safe(strings.Join(cp.Sources, ", ")))
	}
	return ew.err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}
