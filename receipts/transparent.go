package receipts

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// unprotectedRaw decodes an unprotected header map keeping values raw.
func unprotectedRaw(item []byte) (map[any]cbor.RawMessage, error) {
	var m map[any]cbor.RawMessage
	if err := headerDec.Unmarshal(item, &m); err != nil {
		return nil, fmt.Errorf("%w: unprotected header: %v", ErrMalformed, err)
	}
	for k := range m {
		switch k.(type) {
		case int64, string:
		default:
			return nil, fmt.Errorf("%w: unprotected header label %v", ErrMalformed, k)
		}
	}
	return m, nil
}

// receiptsFrom decodes the raw value of header 394.
func receiptsFrom(raw cbor.RawMessage) ([][]byte, error) {
	var list []cbor.RawMessage
	if err := headerDec.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: receipts (394): %v", ErrMalformed, err)
	}
	out := make([][]byte, 0, len(list))
	for i, e := range list {
		if len(e) == 0 || e[0]>>5 != 2 {
			return nil, fmt.Errorf("%w: receipts (394): element %d is not a bstr", ErrMalformed, i)
		}
		b, err := unwrapBstr(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// AttachReceipts returns the transparent statement made of statement with
// receipts appended to the array under label 394 of its unprotected header
// (created if absent). The protected header, payload and signature are kept
// byte for byte, so EntryHash does not change; the unprotected map is
// re-encoded deterministically with its other parameters kept as they were.
// Each receipt must be a tagged COSE_Sign1 of at most MaxReceiptSize bytes;
// its contents are not verified.
func AttachReceipts(statement []byte, receipts ...[]byte) ([]byte, error) {
	return AttachReceiptsLimit(statement, MaxStatementSize, receipts...)
}

// AttachReceiptsLimit is AttachReceipts with a bound of max bytes on the statement
// and the result in place of MaxStatementSize (see ParseStatementLimit).
func AttachReceiptsLimit(statement []byte, max int, receipts ...[]byte) ([]byte, error) {
	_, parts, err := decodeSign1(statement, max, "statement")
	if err != nil {
		return nil, err
	}
	u, err := unprotectedRaw(parts.Unprotected)
	if err != nil {
		return nil, err
	}
	var all [][]byte
	if raw, ok := u[HeaderReceipts]; ok {
		if all, err = receiptsFrom(raw); err != nil {
			return nil, err
		}
	}
	for i, r := range receipts {
		if _, _, err := decodeSign1(r, MaxReceiptSize, "receipt"); err != nil {
			return nil, fmt.Errorf("receipt %d: %w", i, err)
		}
		all = append(all, r)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: no receipts to attach", ErrMalformed)
	}
	if len(all) > MaxReceipts {
		return nil, fmt.Errorf("%w: %d receipts exceed limit %d", ErrMalformed, len(all), MaxReceipts)
	}
	enc, err := encMode.Marshal(all)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	u[HeaderReceipts] = enc
	uenc, err := encMode.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("%w: unprotected header: %v", ErrMalformed, err)
	}
	out := parts.encode(uenc)
	if len(out) > max {
		return nil, fmt.Errorf("%w: transparent statement of %d bytes exceeds limit %d", ErrMalformed, len(out), max)
	}
	return out, nil
}

// SplitTransparent separates a transparent statement into the statement
// with label 394 removed from its unprotected header (other parameters
// kept) and the receipts found there. A statement without 394 is returned
// unchanged with no receipts. For a statement made by SignStatement,
// SplitTransparent(AttachReceipts(s, r...)) gives back s byte for byte.
func SplitTransparent(ts []byte) (statement []byte, receipts [][]byte, err error) {
	_, parts, err := decodeSign1(ts, MaxStatementSize, "transparent statement")
	if err != nil {
		return nil, nil, err
	}
	u, err := unprotectedRaw(parts.Unprotected)
	if err != nil {
		return nil, nil, err
	}
	raw, ok := u[HeaderReceipts]
	if !ok {
		return append([]byte(nil), ts...), nil, nil
	}
	if receipts, err = receiptsFrom(raw); err != nil {
		return nil, nil, err
	}
	if len(receipts) > MaxReceipts {
		return nil, nil, fmt.Errorf("%w: %d receipts exceed limit %d", ErrMalformed, len(receipts), MaxReceipts)
	}
	delete(u, HeaderReceipts)
	uenc, err := encMode.Marshal(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: unprotected header: %v", ErrMalformed, err)
	}
	return parts.encode(uenc), receipts, nil
}
