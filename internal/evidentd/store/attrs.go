package store

// Bounds of an indexed attribute. A value (or name) over them is not indexed by any store,
// so a filter on it matches nothing; profiles' ids and tags are far shorter.
const (
	MaxAttrName  = 64
	MaxAttrValue = 512
)

// Indexable reports whether an attribute fits the bounds stores index.
func Indexable(name, value string) bool {
	return name != "" && len(name) <= MaxAttrName && len(value) <= MaxAttrValue
}
