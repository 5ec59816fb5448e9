package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// AppendEntryLine appends e to dst as one line of entries.jsonl, newline included: the
// members in EntryLine's order, Record and Meta written verbatim. For a Record and Meta in
// compact form (stored canonical JSON) it writes what encoding/json writes for e with HTML
// escaping off, without walking the record a second time: the bytes a chain link hashes are
// then the bytes a reader of the bundle sees. It refuses a Record or Meta that is not one
// JSON object on one line, the only thing a line's framing depends on; whether it is valid
// JSON is for the reader to check, as a verifier does for every record.
func AppendEntryLine(dst []byte, e *EntryLine) ([]byte, error) {
	if err := oneLineObject(e.Record); err != nil {
		return dst, errors.New("bundle: entry record: " + err.Error())
	}
	if e.Meta != nil {
		if err := oneLineObject(e.Meta); err != nil {
			return dst, errors.New("bundle: entry meta: " + err.Error())
		}
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"prev":"`...)
	dst, _ = e.Prev.AppendText(dst)
	dst = append(dst, `","link":"`...)
	dst, _ = e.Link.AppendText(dst)
	dst = append(dst, `","arrival":`...)
	dst = appendJSONString(dst, e.Arrival)
	dst = append(dst, `,"record":`...)
	dst = append(dst, e.Record...)
	if e.Meta != nil {
		dst = append(dst, `,"meta":`...)
		dst = append(dst, e.Meta...)
	}
	return append(dst, "}\n"...), nil
}

// oneLineObject reports why b cannot stand as an object member of a JSON line, or nil.
func oneLineObject(b []byte) error {
	switch {
	case len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}':
		return errors.New("not a JSON object")
	case bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0:
		return errors.New("holds a line break")
	}
	return nil
}

// appendJSONString appends s as a JSON string: as it is when it holds only printable ASCII
// other than '"' and '\\' (a timestamp), else as encoding/json writes it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
