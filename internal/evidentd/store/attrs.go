package store

import "unicode/utf8"

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
