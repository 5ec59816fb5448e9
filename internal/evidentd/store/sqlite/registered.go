package sqlite

import (
	"context"
	"sort"

	"github.com/evident-log/evident/internal/evidentd/store"
)

var _ store.RegistrationLister = (*Store)(nil)

// Registered implements store.RegistrationLister, in log order.
func (s *Store) Registered(ctx context.Context, kind, issuer string) ([]store.Registration, error) {
	regs, err := s.registrations(ctx, `registered = 1 AND kind = ? AND (? = '' OR issuer = ?)`, kind, issuer, issuer)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(regs, func(i, j int) bool { return regs[i].LogIndex < regs[j].LogIndex })
	return regs, nil
}
