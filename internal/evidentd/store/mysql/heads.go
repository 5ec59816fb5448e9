package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// The evidence heads the chains' senders reported (ledger_evidence_heads), one per chain.

// PutEvidenceHead implements store.Store: h replaces the head kept for its chain.
func (s *Store) PutEvidenceHead(ctx context.Context, h *store.EvidenceHead) error {
	_, err := s.db.ExecContext(ctx, `REPLACE INTO ledger_evidence_heads (chain, head, audit_count, reported_at) VALUES (?,?,?,?)`,
		h.Chain, h.Head[:], h.AuditCount, ms(h.ReportedAt))
	if err != nil {
		return fmt.Errorf("evidence head of %q: %w", h.Chain, err)
	}
	return nil
}

// EvidenceHead implements store.Store: the evidence head kept for chain, or
// store.ErrNotFound.
func (s *Store) EvidenceHead(ctx context.Context, chain string) (*store.EvidenceHead, error) {
	h := &store.EvidenceHead{Chain: chain}
	var head []byte
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT head, audit_count, reported_at FROM ledger_evidence_heads WHERE chain=?`, chain).Scan(&head, &h.AuditCount, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, err)
	}
	copy(h.Head[:], head)
	h.ReportedAt = fromMS(at)
	return h, nil
}
