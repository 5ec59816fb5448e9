package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// SCITT registrations made through SCRAPI and the registration policy statements they
// passed (ledger_registrations, store.Registrations); the AUTO_INCREMENT column seq orders
// them.

// registrationCols are the columns scanRegistration reads, in its order.
const registrationCols = `id, kind, statement, issuer, subject, policy_id, received, registered, log_index, checkpoint, receipt`

// scanRegistration reads one row of registrationCols.
func scanRegistration(sc interface{ Scan(...any) error }) (*store.Registration, error) {
	var r store.Registration
	var received int64
	var idx sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Kind, &r.Statement, &r.Issuer, &r.Subject, &r.PolicyID, &received, &r.Registered, &idx, &r.Checkpoint, &r.Receipt); err != nil {
		return nil, err
	}
	r.Received = fromMS(received)
	r.LogIndex = uint64(idx.Int64)
	return &r, nil
}

// AddRegistration implements store.Registrations. Two handles adding the same statement at
// once race on the unique id: the loser reads and returns the winner's row.
func (s *Store) AddRegistration(ctx context.Context, r *store.Registration) (*store.Registration, bool, error) {
	if r.Kind != store.KindStatement && r.Kind != store.KindPolicy {
		return nil, false, fmt.Errorf("registration kind %q", r.Kind)
	}
	res, err := s.db.ExecContext(ctx, `INSERT IGNORE INTO ledger_registrations (id, kind, statement, issuer, subject, policy_id, received) VALUES (?,?,?,?,?,?,?)`,
		r.ID, r.Kind, r.Statement, r.Issuer, r.Subject, r.PolicyID, ms(r.Received))
	if err != nil {
		return nil, false, fmt.Errorf("add registration: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return r, true, nil
	}
	existing, err := s.Registration(ctx, r.ID)
	if err != nil {
		return nil, false, fmt.Errorf("add registration: %w", err)
	}
	return existing, false, nil
}

// CompleteRegistration implements store.Registrations: the first completion of a
// registration is kept, and every caller gets the registration as stored.
func (s *Store) CompleteRegistration(ctx context.Context, id string, logIndex uint64, checkpoint, receipt []byte) (*store.Registration, error) {
	if err := s.completeOnce(ctx, `ledger_registrations`, `id=?`, []any{id}, logIndex, checkpoint, receipt); err != nil { // seals.go
		return nil, fmt.Errorf("complete registration %.80s: %w", id, err)
	}
	return s.Registration(ctx, id)
}

// Registration implements store.Registrations.
func (s *Store) Registration(ctx context.Context, id string) (*store.Registration, error) {
	r, err := scanRegistration(s.db.QueryRowContext(ctx, `SELECT `+registrationCols+` FROM ledger_registrations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("registration %.80s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	return r, nil
}

// registrations returns the registrations matching where, in the order they were added.
func (s *Store) registrations(ctx context.Context, where string, args ...any) ([]store.Registration, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+registrationCols+` FROM ledger_registrations WHERE `+where+` ORDER BY seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("registrations: %w", err)
	}
	defer rows.Close()
	var out []store.Registration
	for rows.Next() {
		r, err := scanRegistration(rows)
		if err != nil {
			return nil, fmt.Errorf("registrations: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// PendingRegistrations implements store.Registrations.
func (s *Store) PendingRegistrations(ctx context.Context) ([]store.Registration, error) {
	return s.registrations(ctx, `registered=0`)
}

// Policies implements store.Registrations.
func (s *Store) Policies(ctx context.Context) ([]store.Registration, error) {
	return s.registrations(ctx, `kind=?`, store.KindPolicy)
}
