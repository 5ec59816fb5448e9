// Package tlogpolicy reads, writes and evaluates witness policies in the tlog-policy text format:
// the Sigsum policy grammar (https://git.glasklar.is/sigsum/core/sigsum-go/-/blob/main/doc/policy.md)
// with witness keys written as C2SP signed-note verifier keys for cosignature/v1
// (https://c2sp.org/tlog-cosignature), which is what Tessera's NewWitnessGroupFromPolicy and
// transparency-dev/formats' witness.ParsePolicy accept.
//
//	# comments run to the end of the line
//	log     <vkey> [<url>]                      the log (kept, not evaluated here)
//	witness <name> <vkey> [<url>]               one witness: an Ed25519 (0x04, or 0x01 read as 0x04) or ML-DSA-44 (0x06) cosigner key
//	group   <name> <k|any|all> <member>...      k of the members (witnesses or earlier groups)
//	quorum  <name|none>                         what a checkpoint must carry to count as witnessed
//
// URLs are optional: a log needs them to reach its witnesses, a verifier does not, and a
// bundle's trust/witness.policy carries none. The parser is stricter than Tessera's in three
// ways a verifier cares about: a group may not list a member twice (it would count twice), a
// numeric threshold must be at least 1, and exactly one quorum line is allowed.
//
// Evaluate answers whether a checkpoint's cosignatures satisfy the quorum, optionally
// counting only cosignatures whose cosignature/v1 timestamp is recent enough. It does not
// check the log's own signature: callers verify that first.
package tlogpolicy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("tlog-policy")

// MaxSize bounds a policy file the parser accepts.
const MaxSize = 1 << 20

// Witness is one cosigner of the policy.
type Witness struct {
	Name     string
	VKey     string // C2SP signed-note verifier key, as written
	URL      string // submission prefix; empty in a verifier's policy
	Verifier note.Verifier
}

// Group is a k-of-n group of members (witness or group names).
type Group struct {
	Name      string
	Threshold int
	Members   []string
	spelled   string // "any", "all" or the number, as written
}

// Log is a log line (recorded and printed, not evaluated).
type Log struct {
	VKey string
	URL  string
}

// Policy is a parsed tlog-policy.
type Policy struct {
	Logs      []Log
	Witnesses []Witness
	Groups    []Group
	// Quorum is the name of the witness or group a checkpoint must satisfy, or "none".
	Quorum string

	order []string // names in definition order, for printing
}

var keywords = map[string]bool{"witness": true, "group": true, "any": true, "all": true, "none": true, "quorum": true, "log": true}

// Parse reads a policy.
func Parse(b []byte) (*Policy, error) {
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%w: policy of %d bytes is over %d", ErrSyntax, len(b), MaxSize)
	}
	p := &Policy{}
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxSize)
	lineNo := 0
	fail := func(format string, args ...any) (*Policy, error) {
		return nil, fmt.Errorf("%w: line %d: %s", ErrSyntax, lineNo, fmt.Sprintf(format, args...))
	}
	quorums := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				return fail("want: log <vkey> [<url>]")
			}
			if _, err := note.NewVerifier(f[1]); err != nil {
				return fail("log key: %v", err)
			}
			l := Log{VKey: f[1]}
			if len(f) == 3 {
				if err := checkURL(f[2]); err != nil {
					return fail("%v", err)
				}
				l.URL = f[2]
			}
			p.Logs = append(p.Logs, l)
		case "witness":
			if len(f) < 3 || len(f) > 4 {
				return fail("want: witness <name> <vkey> [<url>]")
			}
			if err := checkName(f[1], names); err != nil {
				return fail("%v", err)
			}
			v, err := NewCosignatureVerifier(f[2])
			if err != nil {
				return fail("witness %q: not a cosignature/v1 verifier key: %v", f[1], err)
			}
			w := Witness{Name: f[1], VKey: f[2], Verifier: v}
			if len(f) == 4 {
				if err := checkURL(f[3]); err != nil {
					return fail("%v", err)
				}
				w.URL = f[3]
			}
			names[w.Name] = true
			p.Witnesses = append(p.Witnesses, w)
			p.order = append(p.order, w.Name)
		case "group":
			if len(f) < 4 {
				return fail("want: group <name> <k|any|all> <member>...")
			}
			if err := checkName(f[1], names); err != nil {
				return fail("%v", err)
			}
			g := Group{Name: f[1], Members: append([]string(nil), f[3:]...), spelled: f[2]}
			switch f[2] {
			case "any":
				g.Threshold = 1
			case "all":
				g.Threshold = len(g.Members)
			default:
				n, err := strconv.ParseUint(f[2], 10, 8)
				if err != nil || n == 0 || strconv.FormatUint(n, 10) != f[2] {
					return fail("group %q: threshold %q is not any, all or a number from 1", g.Name, f[2])
				}
				g.Threshold = int(n)
			}
			if g.Threshold > len(g.Members) {
				return fail("group %q: threshold %d above its %d member(s)", g.Name, g.Threshold, len(g.Members))
			}
			seen := map[string]bool{}
			for _, m := range g.Members {
				if !names[m] {
					return fail("group %q: member %q is not defined above", g.Name, m)
				}
				if seen[m] {
					return fail("group %q: member %q listed twice", g.Name, m)
				}
				seen[m] = true
			}
			names[g.Name] = true
			p.Groups = append(p.Groups, g)
			p.order = append(p.order, g.Name)
		case "quorum":
			if len(f) != 2 {
				return fail("want: quorum <name|none>")
			}
			quorums++
			if quorums > 1 {
				return fail("a second quorum line")
			}
			if f[1] != "none" && !names[f[1]] {
				return fail("quorum %q is not defined above", f[1])
			}
			p.Quorum = f[1]
		default:
			return fail("unknown keyword %.40q", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	if p.Quorum == "" {
		return nil, fmt.Errorf("%w: no quorum line", ErrSyntax)
	}
	return p, nil
}

func checkName(n string, defined map[string]bool) error {
	if keywords[n] {
		return fmt.Errorf("name %q is a keyword", n)
	}
	if defined[n] {
		return fmt.Errorf("name %q defined twice", n)
	}
	return nil
}

// checkURL accepts http(s)://host[/path]. It does not use net/url: the offline verifier
// imports this package and must not depend on the net package.
func checkURL(s string) error {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "http://")
	}
	host, _, _ := strings.Cut(rest, "/")
	if !ok || host == "" || strings.ContainsAny(s, "\"<>\\^`{|}") {
		return fmt.Errorf("%.80q is not an http(s) URL", s)
	}
	return nil
}

// String prints the policy in the text format; Parse(p.String()) gives the same policy.
func (p *Policy) String() string {
	var b strings.Builder
	for _, l := range p.Logs {
		b.WriteString("log " + l.VKey)
		if l.URL != "" {
			b.WriteString(" " + l.URL)
		}
		b.WriteByte('\n')
	}
	ws := map[string]Witness{}
	for _, w := range p.Witnesses {
		ws[w.Name] = w
	}
	gs := map[string]Group{}
	for _, g := range p.Groups {
		gs[g.Name] = g
	}
	for _, n := range p.order {
		if w, ok := ws[n]; ok {
			b.WriteString("witness " + w.Name + " " + w.VKey)
			if w.URL != "" {
				b.WriteString(" " + w.URL)
			}
			b.WriteByte('\n')
		} else if g, ok := gs[n]; ok {
			t := g.spelled
			if t == "" {
				t = strconv.Itoa(g.Threshold)
			}
			b.WriteString("group " + g.Name + " " + t + " " + strings.Join(g.Members, " ") + "\n")
		}
	}
	b.WriteString("quorum " + p.Quorum + "\n")
	return b.String()
}

// WithoutURLs returns a copy of the policy with every URL removed: what a verifier needs.
func (p *Policy) WithoutURLs() *Policy {
	q := *p
	q.Logs = append([]Log(nil), p.Logs...)
	for i := range q.Logs {
		q.Logs[i].URL = ""
	}
	q.Witnesses = append([]Witness(nil), p.Witnesses...)
	for i := range q.Witnesses {
		q.Witnesses[i].URL = ""
	}
	return &q
}

// Result is the outcome of evaluating one checkpoint against the policy.
type Result struct {
	// Satisfied says whether the quorum is met by the cosignatures that count.
	Satisfied bool
	// Cosigned lists the witnesses whose cosignature verified and counted, sorted.
	Cosigned []string
	// Stale lists witnesses whose cosignature verified but is older than the freshness bound
	// (or dated in the future beyond the allowed skew), sorted; they do not count.
	Stale []string
	// Invalid lists witnesses whose key signed a line of the note that does not verify: a
	// cosignature was altered or forged, which is evidence of tampering, not a missing vote.
	Invalid []string
	// Times holds the cosignature/v1 timestamp of each verified cosignature, by witness.
	Times map[string]time.Time
}

// Freshness bounds which cosignatures count. The zero value counts every valid cosignature.
type Freshness struct {
	// Now is the reference time.
	Now time.Time
	// MaxAge, when positive, makes cosignatures older than Now-MaxAge not count.
	MaxAge time.Duration
	// MaxSkew is how far in the future of Now a timestamp may be (default one minute when MaxAge is set).
	MaxSkew time.Duration
}

// Evaluate checks the cosignatures of a signed checkpoint note against the policy.
func (p *Policy) Evaluate(checkpoint []byte, fr Freshness) Result {
	r := Result{Times: map[string]time.Time{}}
	counted := map[string]bool{}
	skew := fr.MaxSkew
	if skew == 0 {
		skew = time.Minute
	}
	for _, w := range p.Witnesses {
		n, err := note.Open(checkpoint, note.VerifierList(w.Verifier))
		if ise := (*note.InvalidSignatureError)(nil); errors.As(err, &ise) {
			r.Invalid = append(r.Invalid, w.Name)
			continue
		}
		if err != nil || len(n.Sigs) == 0 {
			continue
		}
		var newest time.Time
		for _, s := range n.Sigs {
			if t, err := CosignatureTime(s); err == nil && t.After(newest) {
				newest = t
			}
		}
		r.Times[w.Name] = newest
		if fr.MaxAge > 0 && (newest.Before(fr.Now.Add(-fr.MaxAge)) || newest.After(fr.Now.Add(skew))) {
			r.Stale = append(r.Stale, w.Name)
			continue
		}
		counted[w.Name] = true
		r.Cosigned = append(r.Cosigned, w.Name)
	}
	sort.Strings(r.Cosigned)
	sort.Strings(r.Stale)
	sort.Strings(r.Invalid)
	r.Satisfied = p.satisfied(p.Quorum, counted, 0)
	return r
}

func (p *Policy) satisfied(name string, counted map[string]bool, depth int) bool {
	if name == "none" {
		return true
	}
	if depth > len(p.Groups)+1 {
		return false
	}
	if counted[name] {
		return true
	}
	for _, g := range p.Groups {
		if g.Name != name {
			continue
		}
		n := 0
		for _, m := range g.Members {
			if p.satisfied(m, counted, depth+1) {
				n++
			}
		}
		return n >= g.Threshold
	}
	return false
}

// Describe says in words what the quorum needs, e.g. "group w (2 of a, b)".
func (p *Policy) Describe() string {
	if p.Quorum == "none" {
		return "no witness (quorum none)"
	}
	for _, g := range p.Groups {
		if g.Name == p.Quorum {
			return fmt.Sprintf("group %s: %d of %s", g.Name, g.Threshold, strings.Join(g.Members, ", "))
		}
	}
	return "witness " + p.Quorum
}
