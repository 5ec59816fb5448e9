package store

import "context"

// RegistrationLister lists the registrations the log holds, for exports (GET
// /v1/export?registrations=…). It is optional, like Registrations.
type RegistrationLister interface {
	// Registered lists registrations of kind (KindStatement or KindPolicy) that the log
	// holds (Registered is true), oldest first; issuer, when not empty, keeps only those
	// whose CWT iss is issuer.
	Registered(ctx context.Context, kind, issuer string) ([]Registration, error)
}
