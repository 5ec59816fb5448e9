package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/evident-log/evident/ledger/canonical"
)

// Reading params: the helpers every family uses. The strings they return are copies: a
// string a parsed record holds is a view of that record's buffer, and a timeline keeps what it
// reads for as long as it lives.

// value renders a member as text: a string as is, anything else as canonical JSON.
func value(o *canonical.Object, key string) string {
	if o == nil {
		return ""
	}
	v, ok := o.Get(key)
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return show2(v)
}

// normDigest writes a bare hex SHA-256 (the reference Coordinator's contentHash) as Evident's
// "sha256:<hex>".
func normDigest(h string) string {
	if len(h) == 64 && !strings.Contains(h, ":") {
		return "sha256:" + strings.ToLower(h)
	}
	return h
}

func assignedTo(t *Task) string {
	if len(t.Assignees) == 0 {
		return ""
	}
	return " for " + strings.Join(t.Assignees, ", ")
}

// Digest is the digest Evident gives an artefact's content: "sha256:" + hex(SHA-256(JCS(content))).
func Digest(v canonical.Value) string {
	c, err := canonical.Encode(v)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(h[:])
}

func show2(v canonical.Value) string {
	c, err := canonical.Encode(v)
	if err != nil {
		return ""
	}
	return string(c)
}

func str(o *canonical.Object, key string) string {
	if o == nil {
		return ""
	}
	v, ok := o.Get(key)
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case string:
		return strings.Clone(x) // not a view of the record's buffer, which it would keep alive
	case canonical.Number:
		return string(x)
	}
	return ""
}

func num(o *canonical.Object, key string) int64 {
	if o == nil {
		return 0
	}
	v, _ := o.Get(key)
	if n, ok := v.(canonical.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}

func strs(o *canonical.Object, key string) []string {
	if o == nil {
		return nil
	}
	v, _ := o.Get(key)
	arr, ok := v.([]canonical.Value)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, strings.Clone(s))
		}
	}
	return out
}

func firstList(o *canonical.Object, key string) []string {
	if l := strs(o, key); len(l) > 0 {
		return l
	}
	if s := str(o, key); s != "" {
		return []string{s}
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func appendOnce(l []string, s string) []string {
	if s == "" {
		return l
	}
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

// names reads the list o holds under key: its strings as they are, and of each object the
// name of picks ("" skipped).
func names(o *canonical.Object, key string, of func(*canonical.Object) string) []string {
	if o == nil {
		return nil
	}
	v, _ := o.Get(key)
	arr, _ := v.([]canonical.Value)
	var out []string
	for _, e := range arr {
		switch x := e.(type) {
		case string:
			out = append(out, strings.Clone(x))
		case *canonical.Object:
			if n := of(x); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}
