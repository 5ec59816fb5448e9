package bundle

import (
	"errors"
	"fmt"
	"strings"
)

// ErrAmbiguous reports a bundle whose bytes two honest readers could read differently: a
// name held twice (also up to case or Unicode normalisation), an unsafe or non-regular entry,
// an entry the manifest does not list, a zip whose local headers disagree with its central
// directory, or a manifest with duplicate keys. Such a bundle is refused as a whole.
var ErrAmbiguous = errors.New("bundle is ambiguous")

// ErrLimit reports a bundle beyond one of the reader's limits (Limits); it is refused
// rather than read in part.
var ErrLimit = errors.New("bundle exceeds a limit")

// Ambiguity is one reason a bundle is ambiguous: the entry it concerns and why.
type Ambiguity struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// AmbiguityError lists every ambiguity found in a bundle; errors.Is(err, ErrAmbiguous) holds.
type AmbiguityError struct {
	Entries []Ambiguity
}

func (e *AmbiguityError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: ", ErrAmbiguous)
	for i, a := range e.Entries {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Entries)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%q: %s", a.Name, a.Reason)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrAmbiguous) hold.
func (e *AmbiguityError) Is(target error) bool { return target == ErrAmbiguous }

// LimitError names the limit a bundle exceeds; errors.Is(err, ErrLimit) holds.
type LimitError struct {
	Limit string // which limit: "entries", "file_size", "total_size", "ratio", "manifest_size", "manifest_depth", …
	Name  string // the entry concerned, if one
	Value int64  // what the bundle has (at least)
	Max   int64  // the limit
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("%v: %s %d over the limit of %d", ErrLimit, e.Limit, e.Value, e.Max)
	if e.Name != "" {
		s = fmt.Sprintf("%s (%s)", s, e.Name)
	}
	return s
}

// Is makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }
