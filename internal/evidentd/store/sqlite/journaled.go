package sqlite

import (
	"context"
	"errors"
	"log/slog"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/journal"
	"github.com/evident-log/evident/ledger"
)

// Journaled is the embedded store with a journal in front of its commits (package
// journal): a commit is one append and fsync of the journal, and the journal's entries are
// folded into the database behind. Everything else is the database's: its claims,
// registrations, seals and forks. The database's own CommitAll and UsedRecordIDs (and
// UsedLinks) are reachable through the embedded *Store but go around the journal: they
// are for the journal, not for callers. Only one Journaled may be open on a database:
// OpenJournaled locks the journal's directory.
type Journaled struct {
	*Store
	l *journal.Ledger
}

var (
	_ store.Store              = (*Journaled)(nil)
	_ store.GroupCommitter     = (*Journaled)(nil)
	_ store.Registrations      = (*Journaled)(nil)
	_ store.RegistrationLister = (*Journaled)(nil)
	_ store.Claims             = (*Journaled)(nil)
)

// OpenJournaled opens the database file at path with its journal in the directory
// journalDir, folding into the database what the journal holds that it does not (after a
// crash). Schema migrations are logged to o.Logger.
func OpenJournaled(ctx context.Context, path, journalDir string, o journal.Options) (*Journaled, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	s, err := open(ctx, path, log, nil)
	if err != nil {
		return nil, err
	}
	l, err := journal.Open(ctx, journalDir, s, o)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &Journaled{Store: s, l: l}, nil
}

// Err returns why the store takes no more commits, or nil: a failed write or fsync of the
// journal (journal.Ledger.Err), or of the record file the journal is folded into, after
// which the journal's entries can no longer reach the database.
func (j *Journaled) Err() error { return errors.Join(j.l.Err(), j.recs.Err()) }

// Pending returns the entries journaled and not yet folded into the database.
func (j *Journaled) Pending() int { return j.l.Pending() }

// Commit implements store.Store.
func (j *Journaled) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	return j.l.Commit(ctx, c, prevSize, entries)
}

// CommitGroup implements store.GroupCommitter.
func (j *Journaled) CommitGroup(ctx context.Context, batches []store.Batch) []error {
	return j.l.CommitGroup(ctx, batches)
}

// LoadChain implements store.Store.
func (j *Journaled) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	return j.l.LoadChain(ctx, id)
}

// FindLink implements store.Store.
func (j *Journaled) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	return j.l.FindLink(ctx, chain, l)
}

// FindRecordIDs implements store.Store.
func (j *Journaled) FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error) {
	return j.l.FindRecordIDs(ctx, chain, ids)
}

// Entries implements store.Store.
func (j *Journaled) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	return j.l.Entries(ctx, chain, f)
}

// Chains implements store.Store.
func (j *Journaled) Chains(ctx context.Context) ([]string, error) { return j.l.Chains(ctx) }

// ListChains implements store.Store.
func (j *Journaled) ListChains(ctx context.Context, after string, limit int) ([]store.ChainRecord, error) {
	return j.l.ListChains(ctx, after, limit)
}

// AddSeal implements store.Store.
func (j *Journaled) AddSeal(ctx context.Context, c *store.ChainRecord, s *store.Seal) error {
	return j.l.AddSeal(ctx, c, s)
}

// Close folds the journal into the database and closes both.
func (j *Journaled) Close() error { return j.l.Close() }
