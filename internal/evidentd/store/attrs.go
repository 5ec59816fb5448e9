package store

import (
	"slices"
	"unicode/utf8"
)

// Bounds of an indexed attribute. A value (or name) over them is not indexed by any store,
// so a filter on it matches nothing; profiles' ids and tags are far shorter.
const (
	MaxAttrName  = 64
	MaxAttrValue = 512
)

// Indexable reports whether an attribute fits what stores index: a name of 1 to MaxAttrName
// bytes and a value of at most MaxAttrValue, both valid UTF-8 (as every string of a
// canonical JSON record is).
func Indexable(name, value string) bool {
	return name != "" && len(name) <= MaxAttrName && len(value) <= MaxAttrValue &&
		utf8.ValidString(name) && utf8.ValidString(value)
}

// IndexedAttrs returns what stores keep of the attributes m: the Indexable ones, each
// name's values sorted and once; nil when there are none.
func IndexedAttrs(m map[string][]string) map[string][]string {
	var out map[string][]string
	for name, values := range m {
		var kept []string
		for _, v := range values {
			if Indexable(name, v) {
				kept = append(kept, v)
			}
		}
		if len(kept) == 0 {
			continue
		}
		slices.Sort(kept)
		if out == nil {
			out = make(map[string][]string, len(m))
		}
		out[name] = slices.Compact(kept)
	}
	return out
}
