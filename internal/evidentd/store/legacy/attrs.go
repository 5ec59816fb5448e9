package legacy

import (
	"encoding/json"
	"fmt"
)

// decodeAttrs decodes an entry row's attrs column: a JSON object of arrays of strings.
func decodeAttrs(b []byte) (map[string][]string, error) {
	var raw map[string][]*string
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) == 0 {
		return nil, fmt.Errorf("attributes %.60q: %w", b, ErrCorrupt)
	}
	m := make(map[string][]string, len(raw))
	for name, ps := range raw {
		if ps == nil {
			return nil, fmt.Errorf("attributes %.60q: %w", b, ErrCorrupt)
		}
		vs := make([]string, len(ps))
		for i, p := range ps {
			if p == nil {
				return nil, fmt.Errorf("attributes %.60q: %w", b, ErrCorrupt)
			}
			vs[i] = *p
		}
		m[name] = vs
	}
	return m, nil
}
