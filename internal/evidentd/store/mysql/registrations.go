package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// registrationsSchema holds SCITT registrations made through SCRAPI and the registration
// policy statements they passed; seq (AUTO_INCREMENT) orders them.
const registrationsSchema = `CREATE TABLE IF NOT EXISTS ledger_registrations (
	seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
	id VARBINARY(255) NOT NULL,
	kind VARBINARY(32) NOT NULL,
	statement LONGBLOB NOT NULL,
	issuer VARBINARY(1024) NOT NULL,
	subject VARBINARY(1024) NOT NULL,
	policy_id VARBINARY(255) NOT NULL DEFAULT '',
	received BIGINT NOT NULL,
	registered BOOLEAN NOT NULL DEFAULT FALSE,
	log_index BIGINT UNSIGNED NULL,
	checkpoint LONGBLOB NULL,
	receipt LONGBLOB NULL,
	UNIQUE KEY registrations_id (id),
	KEY registrations_pending (registered, seq),
	KEY registrations_kind (kind, seq)
) ENGINE=InnoDB`

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

// AddRegistration implements store.Registrations. Two replicas adding the same statement
// at once race on the unique id: the loser reads and returns the winner's row.
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

// CompleteRegistration implements store.Registrations.
func (s *Store) CompleteRegistration(ctx context.Context, id string, logIndex uint64, checkpoint, receipt []byte) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM ledger_registrations WHERE id = ? FOR UPDATE`, id).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE ledger_registrations SET registered = TRUE, log_index = ?, checkpoint = ?, receipt = ? WHERE id = ?`,
			logIndex, checkpoint, receipt, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("complete registration %.80s: %w", id, err)
	}
	return nil
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
	return s.registrations(ctx, `registered = FALSE`)
}

// Policies implements store.Registrations.
func (s *Store) Policies(ctx context.Context) ([]store.Registration, error) {
	return s.registrations(ctx, `kind = ?`, store.KindPolicy)
}
