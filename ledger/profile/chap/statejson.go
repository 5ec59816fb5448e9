package chap

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// The chain state is encoded at every commit, so once an envelope when envelopes come one a
// request; encoding/json's reflection over the key history took 10–15 µs of that
// envelope's CPU. appendState writes the same bytes directly; statejson_test.go holds it to
// encoding/json over random key histories, odd strings and times included.

// appendState appends the JSON of s: what encoding/json writes for State's fields.
func appendState(b []byte, s *State) ([]byte, error) {
	b = append(b, `{"keys":`...)
	var err error
	if b, err = appendKeyring(b, s.Keys); err != nil {
		return nil, err
	}
	if s.Own != (OwnChain{}) {
		b = append(b, `,"own":`...)
		b = appendOwn(b, &s.Own)
	}
	return append(b, '}'), nil
}

func appendKeyring(b []byte, k *Keyring) ([]byte, error) {
	if k == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"participants":`...)
	if k.Participants == nil {
		b = append(b, "null"...)
	} else {
		uris := make([]string, 0, len(k.Participants))
		for uri := range k.Participants {
			uris = append(uris, uri)
		}
		slices.Sort(uris) // encoding/json writes a map's members in the order of their keys
		b = append(b, '{')
		for i, uri := range uris {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, uri)
			b = append(b, ':')
			var err error
			if b, err = appendParticipant(b, k.Participants[uri]); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if len(k.Pending) > 0 {
		b = append(b, `,"pending":[`...)
		for i := range k.Pending {
			if i > 0 {
				b = append(b, ',')
			}
			p := &k.Pending[i]
			b = append(b, `{"seq":`...)
			b = strconv.AppendUint(b, p.Seq, 10)
			b = append(b, `,"sender":`...)
			b = appendString(b, p.Sender)
			b = append(b, `,"kid":`...)
			b = appendString(b, p.Kid)
			b = append(b, `,"message":`...)
			b = appendBase64(b, p.Message)
			b = append(b, `,"sig":`...)
			b = appendBase64(b, p.Value)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendParticipant(b []byte, p *Participant) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"uri":`...)
	b = appendString(b, p.URI)
	if p.Role != "" {
		b = append(b, `,"role":`...)
		b = appendString(b, p.Role)
	}
	b = append(b, `,"keys":`...)
	if p.Keys == nil {
		return append(b, "null}"...), nil
	}
	b = append(b, '[')
	for i := range p.Keys {
		if i > 0 {
			b = append(b, ',')
		}
		k := &p.Keys[i]
		b = append(b, `{"kid":`...)
		b = appendString(b, k.Kid)
		b = append(b, `,"x":`...)
		b = appendBase64(b, k.Public)
		b = append(b, `,"from":`...)
		var err error
		if b, err = appendTime(b, k.From); err != nil {
			return nil, err
		}
		if !k.Until.IsZero() {
			b = append(b, `,"until":`...)
			if b, err = appendTime(b, k.Until); err != nil {
				return nil, err
			}
		}
		if k.Revoked {
			b = append(b, `,"revoked":true`...)
		}
		b = append(b, `,"added_by":`...)
		b = appendString(b, k.AddedBy)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

func appendOwn(b []byte, o *OwnChain) []byte {
	// Each member is written with a leading comma; the first one's becomes the brace.
	start := len(b)
	if o.Begun {
		b = append(b, `,"begun":true`...)
	}
	if o.From != 0 {
		b = strconv.AppendUint(append(b, `,"from":`...), o.From, 10)
	}
	if o.Unchained != 0 {
		b = strconv.AppendUint(append(b, `,"unchained":`...), o.Unchained, 10)
	}
	if o.Diverged {
		b = append(b, `,"diverged":true`...)
	}
	if !o.Head.IsZero() {
		b, _ = o.Head.AppendText(append(b, `,"head":"`...)) // hexadecimal with its algorithm's name: nothing to escape
		b = append(b, '"')
	}
	if o.Next != 0 {
		b = strconv.AppendUint(append(b, `,"next":`...), o.Next, 10)
	}
	if len(b) == start {
		return append(b, "{}"...)
	}
	b[start] = '{'
	return append(b, '}')
}

// appendString appends s as encoding/json writes it: a string of printable ASCII other than
// the characters it escapes is copied; any other goes through encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendBase64 appends v as encoding/json writes a byte slice: null when nil, else standard
// base64 with padding, quoted.
func appendBase64(b []byte, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// appendTime appends t as time.Time.MarshalJSON does, with its error for a year it cannot
// write.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	q, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, q...), nil
}
