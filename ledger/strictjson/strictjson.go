// Package strictjson decodes JSON files of the bundle format so that every reader sees the
// same document: it refuses what encoding/json would silently resolve one way and another
// parser another way — duplicate keys (the last wins in Go, the first in others), object
// keys that match a field only when case is ignored (encoding/json merges "files" and
// "FILES"), lone surrogates and invalid UTF-8 (replaced in Go, refused elsewhere), numbers
// beyond ±(2^53-1) (rounded by JavaScript), unknown fields and trailing data. Nesting and
// size are bounded.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/evident-log/evident/ledger/canonical"
)

// ErrAmbiguous reports a document that two JSON readers could decode differently.
var ErrAmbiguous = errors.New("ambiguous JSON")

// ErrTooDeep reports a document nested deeper than the limit.
var ErrTooDeep = errors.New("JSON nested too deep")

// Decode decodes data into v (a pointer to a struct) after checking that it is one JSON
// value every reader sees alike, nested at most maxDepth deep and at most maxSize bytes.
// Errors wrap ErrAmbiguous, ErrTooDeep, or describe malformed JSON or a field mismatch.
func Decode(data []byte, v any, maxDepth, maxSize int) error {
	tree, err := canonical.Parse(data, canonical.Options{MaxDepth: maxDepth, MaxSize: maxSize, SafeIntegersOnly: true})
	switch {
	case errors.Is(err, canonical.ErrDuplicateKey), errors.Is(err, canonical.ErrLoneSurrogate),
		errors.Is(err, canonical.ErrNumber), errors.Is(err, canonical.ErrInvalidUTF8):
		return fmt.Errorf("%w: %w", ErrAmbiguous, err)
	case errors.Is(err, canonical.ErrTooDeep):
		return fmt.Errorf("%w: %w", ErrTooDeep, err)
	case err != nil:
		return err
	}
	if err := exactKeys(tree, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// exactKeys walks the parsed document beside the Go type it will be decoded into and refuses
// an object key that names a struct field only when case is ignored.
func exactKeys(v canonical.Value, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil // the type decides for itself
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(*canonical.Object)
		if !ok {
			return nil // a type mismatch encoding/json reports
		}
		fields := jsonFields(t)
		for _, m := range obj.Members {
			f, ok := fields[m.Key]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, m.Key) {
						return fmt.Errorf("%w: key %q%s differs from the field %q only in case", ErrAmbiguous, m.Key, where(at), name)
					}
				}
				continue // an unknown field: encoding/json refuses it
			}
			if err := exactKeys(m.Value, f, at+"."+m.Key); err != nil {
				return err
			}
		}
	case reflect.Map:
		if obj, ok := v.(*canonical.Object); ok {
			for _, m := range obj.Members {
				if err := exactKeys(m.Value, t.Elem(), at+"."+m.Key); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if arr, ok := v.([]canonical.Value); ok {
			for i, e := range arr {
				if err := exactKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func where(at string) string {
	if at == "" {
		return ""
	}
	return " (in " + strings.TrimPrefix(at, ".") + ")"
}

// jsonFields maps the JSON names of t's fields (embedded structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
