package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// registrationsSchema is migration 2: SCITT registrations made through SCRAPI and the
// registration policy statements they passed.
const registrationsSchema = `
CREATE TABLE IF NOT EXISTS scitt_registrations (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	statement BLOB NOT NULL,
	issuer TEXT NOT NULL,
	subject TEXT NOT NULL,
	policy_id TEXT NOT NULL DEFAULT '',
	received INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	registered INTEGER NOT NULL DEFAULT 0,
	log_index INTEGER,
	checkpoint BLOB,
	receipt BLOB
);
CREATE INDEX IF NOT EXISTS scitt_registrations_pending ON scitt_registrations(registered, seq);
CREATE INDEX IF NOT EXISTS scitt_registrations_kind ON scitt_registrations(kind, seq);
`

var _ store.Registrations = (*Store)(nil)

const registrationCols = `id, kind, statement, issuer, subject, policy_id, received, registered, log_index, checkpoint, receipt`

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

// AddRegistration implements store.Registrations.
func (s *Store) AddRegistration(ctx context.Context, r *store.Registration) (*store.Registration, bool, error) {
	if r.Kind != store.KindStatement && r.Kind != store.KindPolicy {
		return nil, false, fmt.Errorf("registration kind %q", r.Kind)
	}
	var existing *store.Registration
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		e, err := scanRegistration(tx.QueryRowContext(ctx, `SELECT `+registrationCols+` FROM scitt_registrations WHERE id = ?`, r.ID))
		switch {
		case err == nil:
			existing = e
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO scitt_registrations (id, kind, statement, issuer, subject, policy_id, received, seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), -1) + 1 FROM scitt_registrations))`,
			r.ID, r.Kind, r.Statement, r.Issuer, r.Subject, r.PolicyID, ms(r.Received))
		created = err == nil
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("add registration: %w", err)
	}
	if existing != nil {
		return existing, false, nil
	}
	return r, created, nil
}

// CompleteRegistration implements store.Registrations.
func (s *Store) CompleteRegistration(ctx context.Context, id string, logIndex uint64, checkpoint, receipt []byte) error {
	res, err := s.w.ExecContext(ctx, `UPDATE scitt_registrations SET registered = 1, log_index = ?, checkpoint = ?, receipt = ? WHERE id = ?`,
		int64(logIndex), checkpoint, receipt, id)
	if err != nil {
		return fmt.Errorf("complete registration: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("complete registration %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Registration implements store.Registrations.
func (s *Store) Registration(ctx context.Context, id string) (*store.Registration, error) {
	r, err := scanRegistration(s.r.QueryRowContext(ctx, `SELECT `+registrationCols+` FROM scitt_registrations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("registration %.80s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	return r, nil
}

func (s *Store) registrations(ctx context.Context, where string, args ...any) ([]store.Registration, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+registrationCols+` FROM scitt_registrations WHERE `+where+` ORDER BY seq`, args...)
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
	return s.registrations(ctx, `registered = 0`)
}

// Policies implements store.Registrations.
func (s *Store) Policies(ctx context.Context) ([]store.Registration, error) {
	return s.registrations(ctx, `kind = ?`, store.KindPolicy)
}
