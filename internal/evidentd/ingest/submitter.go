package ingest

import "context"

type submitterKey struct{}

// WithSubmitter returns ctx carrying the operator identity the HTTP layer authenticated for
// a submission; Ingest passes it to the profile as ledger.Position.Submitter.
func WithSubmitter(ctx context.Context, operator string) context.Context {
	return context.WithValue(ctx, submitterKey{}, operator)
}

// SubmitterFrom returns the operator identity carried by ctx ("" when none).
func SubmitterFrom(ctx context.Context) string {
	s, _ := ctx.Value(submitterKey{}).(string)
	return s
}
