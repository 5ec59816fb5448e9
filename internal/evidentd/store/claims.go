package store

import (
	"context"
	"time"
)

// Claims record, for every entry evidentd appends to the transparency log (seal
// statements, SCITT registrations, the genesis entry), which process is appending it and,
// once appended, at which log index. They make "one statement, one log index" hold across
// processes: replicas sharing one database and one log claim an entry before appending it,
// wait while another live process holds the claim, take over a claim whose lease expired,
// and all answer with the index recorded first.
//
// Leases are kept on the database's clock, so replicas' clocks need not agree.
type Claims interface {
	// ClaimEntry claims entry for owner for lease, unless another owner holds a lease that
	// has not expired or the entry is recorded as appended. logSize is the log's size now:
	// the first claim keeps it as Claim.From, the lowest index the entry can have been
	// appended at by any owner.
	ClaimEntry(ctx context.Context, entry [32]byte, owner string, lease time.Duration, logSize uint64) (Claim, error)
	// RenewClaim sets owner's lease to lease from now (a lease of zero or less ends it, so
	// that another owner need not wait); false when owner no longer holds the claim.
	RenewClaim(ctx context.Context, entry [32]byte, owner string, lease time.Duration) (bool, error)
	// EntryAppended records entry's log index unless one is recorded already, and returns
	// the index recorded: the first one wins, forever.
	EntryAppended(ctx context.Context, entry [32]byte, index uint64) (uint64, error)
	// ExpireClaims ends every lease, for a process that knows no other can hold one (the
	// embedded store's single process, at start).
	ExpireClaims(ctx context.Context) error
}

// Claim is the state of one entry's claim.
type Claim struct {
	// Held reports that the caller now holds the claim and must append the entry (or
	// find it, when Earlier) and record it with EntryAppended.
	Held bool
	// Earlier reports that the claim existed before this call: an earlier owner may have
	// appended the entry at an index at or after From without recording it.
	Earlier bool
	// From is the log size when the entry was first claimed.
	From uint64
	// Owner holds the claim until Until (the database's clock).
	Owner string
	Until time.Time
	// Appended reports that the entry's log index is recorded: Index.
	Appended bool
	Index    uint64
}
