package store

import "database/sql"

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

// ScanAttrs reads rows of (seq, name, value), ordered by seq, into the Attrs of es (sorted
// by seq); rows of entries not in es are skipped. It closes rows. SQL implementations of
// Store share it.
func ScanAttrs(rows *sql.Rows, es []Entry) error {
	defer rows.Close()
	i := 0
	for rows.Next() {
		var seq uint64
		var name, value string
		if err := rows.Scan(&seq, &name, &value); err != nil {
			return err
		}
		for i < len(es) && es[i].Seq < seq {
			i++
		}
		if i == len(es) {
			break
		}
		if es[i].Seq != seq {
			continue
		}
		if es[i].Attrs == nil {
			es[i].Attrs = map[string][]string{}
		}
		es[i].Attrs[name] = append(es[i].Attrs[name], value)
	}
	return rows.Err()
}
