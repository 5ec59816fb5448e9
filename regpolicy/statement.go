package regpolicy

import (
	"crypto"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/evident-log/evident/receipts"
)

// Sign makes the policy statement of p: a signed statement by the service (iss = issuer,
// sub = Subject, iat = at) whose payload is the policy document.
func Sign(s *receipts.Signer, issuer string, p *Policy, at time.Time) ([]byte, error) {
	payload, err := p.Marshal()
	if err != nil {
		return nil, err
	}
	return receipts.SignStatement(s, payload, receipts.StatementOptions{
		Claims:      receipts.Claims{Issuer: issuer, Subject: Subject, IssuedAt: at.Unix()},
		ContentType: ContentType,
	})
}

// ID returns the policy id of a policy statement: the hex of its log entry
// (receipts.EntryHash), so the id names exactly the statement registered in the log.
func ID(statement []byte) (string, error) {
	e, err := receipts.EntryHash(statement)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(e[:]), nil
}

// FromStatement verifies a policy statement with the service's key and returns the policy
// it carries. Receipts attached to it (a transparent statement) are ignored here.
func FromStatement(statement []byte, servicePub crypto.PublicKey) (*Policy, error) {
	stmt, _, err := receipts.SplitTransparent(statement)
	if err != nil {
		return nil, fmt.Errorf("%w: policy statement: %v", ErrInvalidPolicy, err)
	}
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		return nil, fmt.Errorf("%w: policy statement: %v", ErrInvalidPolicy, err)
	}
	if st.ContentType != ContentType || st.Claims.Subject != Subject {
		return nil, fmt.Errorf("%w: not a policy statement (content type %q, sub %q)", ErrInvalidPolicy, st.ContentType, st.Claims.Subject)
	}
	if err := st.Verify(servicePub); err != nil {
		return nil, fmt.Errorf("%w: policy statement signature: %v", ErrInvalidPolicy, err)
	}
	return Parse(st.Payload)
}
