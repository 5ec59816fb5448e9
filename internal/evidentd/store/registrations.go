package store

import (
	"context"
	"time"
)

// Registration kinds.
const (
	// KindStatement is a signed statement an external issuer registered through SCRAPI.
	KindStatement = "statement"
	// KindPolicy is a registration policy statement signed and registered by the service.
	KindPolicy = "policy"
)

// Registration is a statement registered in the transparency log through SCRAPI
// (POST /entries), or a registration policy statement. Its ID is content-addressed: the
// hex of its log entry (SHA-256 of the statement with an empty unprotected header), so
// registering the same statement twice names the same registration.
type Registration struct {
	ID         string
	Kind       string // KindStatement or KindPolicy
	Statement  []byte // as received (for a policy: as signed)
	Issuer     string // CWT iss
	Subject    string // CWT sub
	PolicyID   string // the policy statement this registration passed ("" for a policy)
	Received   time.Time
	Registered bool   // the log holds it (LogIndex, Checkpoint and Receipt are set)
	LogIndex   uint64 // index in the transparency log
	Checkpoint []byte // the checkpoint the stored receipt was cut from
	Receipt    []byte // RFC 9942 receipt
}

// Registrations stores SCRAPI registrations. It is a separate interface from Store so
// that ledger stores which do not serve SCRAPI need not implement it; evidentd serves
// SCRAPI when its store does.
type Registrations interface {
	// AddRegistration stores a new pending registration. If one with the same ID exists it
	// is returned unchanged with created = false.
	AddRegistration(ctx context.Context, r *Registration) (existing *Registration, created bool, err error)
	// CompleteRegistration records where a registration sits in the log, unless that is
	// recorded already, and returns the registration as stored (the first completion is
	// kept for ever).
	CompleteRegistration(ctx context.Context, id string, logIndex uint64, checkpoint, receipt []byte) (*Registration, error)
	// Registration returns one registration, or ErrNotFound.
	Registration(ctx context.Context, id string) (*Registration, error)
	// PendingRegistrations lists registrations not yet in the log (after a crash, to
	// finish them), oldest first.
	PendingRegistrations(ctx context.Context) ([]Registration, error)
	// Policies lists registration policy statements, oldest first (the last one is in force).
	Policies(ctx context.Context) ([]Registration, error)
}
