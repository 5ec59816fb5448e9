package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/evident-log/evident/ledger/canonical"
)

// ErrPatch is matched (errors.Is) by every failure to apply a diff.
var ErrPatch = errors.New("diff does not apply")

// maxPatchOps bounds the operations of one diff, so a hostile record cannot make replay quadratic.
const maxPatchOps = 1024

// Apply applies an RFC 6902 JSON Patch to a copy of doc and returns the result; doc is not
// changed. Besides RFC 6902's operations (add, remove, replace, move, copy, test) it reads the
// shape the CHAP paper's listings use for a replacement, {"op":"replace","path","from","to"}:
// "to" is the new value and "from" the value the path must hold before (checked like a test).
func Apply(doc canonical.Value, patch canonical.Value) (canonical.Value, error) {
	ops, ok := patch.([]canonical.Value)
	if !ok {
		return nil, fmt.Errorf("%w: a diff is a JSON array of operations", ErrPatch)
	}
	if len(ops) > maxPatchOps {
		return nil, fmt.Errorf("%w: %d operations, at most %d", ErrPatch, len(ops), maxPatchOps)
	}
	out := deepCopy(doc)
	for i, ov := range ops {
		op, ok := ov.(*canonical.Object)
		if !ok {
			return nil, fmt.Errorf("%w: operation %d is not an object", ErrPatch, i)
		}
		var err error
		out, err = applyOp(out, op)
		if err != nil {
			return nil, fmt.Errorf("%w: operation %d: %v", ErrPatch, i, err)
		}
	}
	return out, nil
}

func applyOp(doc canonical.Value, op *canonical.Object) (canonical.Value, error) {
	name, _ := op.String("op")
	path, ok := op.String("path")
	if !ok {
		return nil, errors.New("no path")
	}
	ptr, err := parsePointer(path)
	if err != nil {
		return nil, err
	}
	value, hasValue := op.Get("value")
	switch name {
	case "add":
		if !hasValue {
			return nil, errors.New("add needs a value")
		}
		return add(doc, ptr, deepCopy(value), false)
	case "remove":
		if len(ptr) == 0 {
			return nil, errors.New("cannot remove the whole document")
		}
		if _, err := get(doc, ptr); err != nil {
			return nil, err
		}
		return remove(doc, ptr)
	case "replace":
		if !hasValue {
			// The CHAP paper's listings: {"op":"replace","path","from":<old>,"to":<new>}.
			to, hasTo := op.Get("to")
			if !hasTo {
				return nil, errors.New("replace needs a value (or the paper's from/to)")
			}
			if from, hasFrom := op.Get("from"); hasFrom {
				cur, err := get(doc, ptr)
				if err != nil {
					return nil, err
				}
				if !equal(cur, from) {
					return nil, fmt.Errorf("%s holds %s, not the %s the diff replaces", path, show(cur), show(from))
				}
			}
			value = to
		}
		if _, err := get(doc, ptr); err != nil {
			return nil, err
		}
		return add(doc, ptr, deepCopy(value), true)
	case "move", "copy":
		fromPath, ok := op.String("from")
		if !ok {
			return nil, fmt.Errorf("%s needs from", name)
		}
		from, err := parsePointer(fromPath)
		if err != nil {
			return nil, err
		}
		v, err := get(doc, from)
		if err != nil {
			return nil, err
		}
		if name == "move" {
			if isPrefix(from, ptr) && len(from) < len(ptr) {
				return nil, errors.New("cannot move a value into itself")
			}
			if doc, err = remove(doc, from); err != nil {
				return nil, err
			}
		}
		return add(doc, ptr, deepCopy(v), false)
	case "test":
		if !hasValue {
			return nil, errors.New("test needs a value")
		}
		cur, err := get(doc, ptr)
		if err != nil {
			return nil, err
		}
		if !equal(cur, value) {
			return nil, fmt.Errorf("test failed at %s", path)
		}
		return doc, nil
	default:
		return nil, fmt.Errorf("unknown op %.20q", name)
	}
}

// parsePointer parses an RFC 6901 JSON Pointer.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("pointer %.60q does not start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(s, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("pointer %.60q has a bad ~ escape", p)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func isPrefix(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func arrayIndex(tok string, n int, allowEnd bool) (int, error) {
	if allowEnd && tok == "-" {
		return n, nil
	}
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("bad array index %.20q", tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("bad array index %.20q", tok)
	}
	limit := n - 1
	if allowEnd {
		limit = n
	}
	if i > limit {
		return 0, fmt.Errorf("array index %d out of range (length %d)", i, n)
	}
	return i, nil
}

func get(doc canonical.Value, ptr []string) (canonical.Value, error) {
	cur := doc
	for _, tok := range ptr {
		switch c := cur.(type) {
		case *canonical.Object:
			v, ok := c.Get(tok)
			if !ok {
				return nil, fmt.Errorf("no member %.60q", tok)
			}
			cur = v
		case []canonical.Value:
			i, err := arrayIndex(tok, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("cannot descend into a scalar at %.60q", tok)
		}
	}
	return cur, nil
}

// add sets ptr to v; replace=true overwrites an array element instead of inserting.
func add(doc canonical.Value, ptr []string, v canonical.Value, replace bool) (canonical.Value, error) {
	if len(ptr) == 0 {
		return v, nil
	}
	parent, err := get(doc, ptr[:len(ptr)-1])
	if err != nil {
		return nil, err
	}
	last := ptr[len(ptr)-1]
	switch p := parent.(type) {
	case *canonical.Object:
		for i := range p.Members {
			if p.Members[i].Key == last {
				p.Members[i].Value = v
				return doc, nil
			}
		}
		p.Members = append(p.Members, canonical.Member{Key: last, Value: v})
		return doc, nil
	case []canonical.Value:
		i, err := arrayIndex(last, len(p), !replace)
		if err != nil {
			return nil, err
		}
		if replace {
			p[i] = v
			return doc, nil
		}
		np := make([]canonical.Value, 0, len(p)+1)
		np = append(append(append(np, p[:i]...), v), p[i:]...)
		return setParent(doc, ptr[:len(ptr)-1], np)
	default:
		return nil, errors.New("parent is not a container")
	}
}

func remove(doc canonical.Value, ptr []string) (canonical.Value, error) {
	parent, err := get(doc, ptr[:len(ptr)-1])
	if err != nil {
		return nil, err
	}
	last := ptr[len(ptr)-1]
	switch p := parent.(type) {
	case *canonical.Object:
		for i := range p.Members {
			if p.Members[i].Key == last {
				p.Members = append(p.Members[:i:i], p.Members[i+1:]...)
				return doc, nil
			}
		}
		return nil, fmt.Errorf("no member %.60q", last)
	case []canonical.Value:
		i, err := arrayIndex(last, len(p), false)
		if err != nil {
			return nil, err
		}
		np := append(append([]canonical.Value{}, p[:i]...), p[i+1:]...)
		return setParent(doc, ptr[:len(ptr)-1], np)
	default:
		return nil, errors.New("parent is not a container")
	}
}

// setParent replaces the array at ptr (arrays change length, so their holder is rewritten).
func setParent(doc canonical.Value, ptr []string, v canonical.Value) (canonical.Value, error) {
	return add(doc, ptr, v, true)
}

func deepCopy(v canonical.Value) canonical.Value {
	switch x := v.(type) {
	case *canonical.Object:
		o := &canonical.Object{Members: make([]canonical.Member, len(x.Members))}
		for i, m := range x.Members {
			o.Members[i] = canonical.Member{Key: m.Key, Value: deepCopy(m.Value)}
		}
		return o
	case []canonical.Value:
		a := make([]canonical.Value, len(x))
		for i := range x {
			a[i] = deepCopy(x[i])
		}
		return a
	default:
		return v
	}
}

func equal(a, b canonical.Value) bool {
	ea, err1 := canonical.Encode(a)
	eb, err2 := canonical.Encode(b)
	return err1 == nil && err2 == nil && string(ea) == string(eb)
}

// show renders a value as canonical JSON, shortened for messages.
func show(v canonical.Value) string {
	b, err := canonical.Encode(v)
	if err != nil {
		return "?"
	}
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
