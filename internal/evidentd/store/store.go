// Package store defines the ledger store: where evidentd keeps chains, their entries and
// their seals. Implementations (the embedded default on Pebble in store/embedded, and the
// MySQL-compatible one of store/mysql for several replicas) are interchangeable below this
// interface; the ingest pipeline never
// asks which one it runs on. Every implementation passes the conformance suite of
// store/storetest.
//
// Contract: Commit is durable before it returns (fsync), and atomic: either every entry of
// the batch and the new chain head are stored, or nothing is. Commit refuses with
// ErrConflict when the chain moved since the caller loaded it, which is how one writer
// per chain is enforced across processes.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/evident-log/evident/ledger"
)

// Sentinel errors callers branch on.
var (
	ErrNotFound = errors.New("not found")
	// ErrConflict means the chain head moved since it was loaded: reload and retry.
	ErrConflict = errors.New("chain head moved (concurrent writer)")
)

// ChainRecord is the persisted state of one chain.
type ChainRecord struct {
	ID         string
	Profile    string
	Size       uint64
	Head       ledger.Link
	Tree       []byte // ledger.Tree JSON (compact range)
	State      []byte // profile state JSON
	Closed     bool
	LastSeal   string
	SealedSize uint64
	// Created is when the chain was created; Commit of a new chain stores the time given,
	// or the time of the commit when it is zero.
	Created time.Time
}

// Entry is one accepted record with its position.
type Entry struct {
	Chain    string
	Seq      uint64
	Prev     ledger.Link
	Link     ledger.Link
	Arrival  time.Time
	Record   []byte // canonical bytes: exactly what the link hashes
	RecordID string
	Method   string
	Sender   string
	TS       time.Time
	Signed   bool
	// Meta is what the submitter sent beside the record, unhashed (ledger.Admission.Meta: a
	// CHAP audit entry's seq, arrived and prev_hash); nil when nothing was.
	Meta []byte
	// Attrs are the profile's attributes of the record (ledger.Admission.Attrs), indexed for
	// filtered reads (Filter.Attrs); Entries returns those that are Indexable, each name's
	// values sorted and once.
	Attrs map[string][]string
}

// Seal is one seal of a chain: its statement, and once registered, its place in the log.
type Seal struct {
	Chain      string
	N          uint64 // 0, 1, 2 … per chain
	Size       uint64 // chain size sealed
	Closed     bool
	Statement  []byte   // COSE seal statement
	EntryHash  [32]byte // log entry: SHA-256 of the statement with empty unprotected header
	SealedAt   time.Time
	Registered bool   // the log holds it (LogIndex, Checkpoint and Receipt are set)
	LogIndex   uint64 // index in the transparency log
	Checkpoint []byte // the checkpoint the receipt was cut from
	Receipt    []byte // RFC 9942 receipt
}

// Fork is a refused record that named an already-used predecessor, kept as evidence beside
// the entry that holds that position.
type Fork struct {
	Chain       string
	Seq         uint64 // position the refused record claimed (the existing entry's seq)
	ExistingSeq uint64
	Record      []byte
	Arrival     time.Time
}

// EvidenceHead is the head a chain's sender reported for its own evidence chain (a CHAP
// Coordinator's workspace.describe: evidence_head after audit_count entries).
type EvidenceHead struct {
	Chain      string
	Head       ledger.Link
	AuditCount uint64 // entries the sender had recorded; 0 when it gave no count
	ReportedAt time.Time
}

// Filter selects entries for reads.
type Filter struct {
	From   uint64 // first seq
	Limit  int
	Method string
	Sender string
	Since  time.Time
	Until  time.Time
	// Attrs selects entries carrying every listed value of every listed attribute (AND over
	// names and values), e.g. {"task_id": {"t1"}, "tag": {"a", "b"}}.
	Attrs map[string][]string
}

// Store is the ledger store.
type Store interface {
	// LoadChain returns a chain's state, or ErrNotFound.
	LoadChain(ctx context.Context, id string) (*ChainRecord, error)
	// Commit stores entries and the new chain state atomically and durably, provided the
	// stored chain still has size prevSize (0 and absent for a new chain); else ErrConflict.
	Commit(ctx context.Context, c *ChainRecord, prevSize uint64, entries []Entry) error
	// FindLink returns the seq of the entry whose link is l.
	FindLink(ctx context.Context, chain string, l ledger.Link) (seq uint64, found bool, err error)
	// FindRecordIDs returns, for those of ids already used in chain, the seq that used each.
	FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error)
	// Entries returns entries in chain order matching f.
	Entries(ctx context.Context, chain string, f Filter) ([]Entry, error)
	// AddSeal stores a new (not yet registered) seal and the chain state that points at it,
	// provided the chain still has size c.Size; else ErrConflict.
	AddSeal(ctx context.Context, c *ChainRecord, s *Seal) error
	// CompleteSeal records where a seal sits in the log, unless that is recorded already,
	// and returns the seal as stored: the first completion is kept for ever, so every
	// caller answers with the same log index and receipt.
	CompleteSeal(ctx context.Context, chain string, n, logIndex uint64, checkpoint, receipt []byte) (*Seal, error)
	// Seals lists a chain's seals in order.
	Seals(ctx context.Context, chain string) ([]Seal, error)
	// PendingSeals lists seals not yet registered (after a crash, to finish them).
	PendingSeals(ctx context.Context) ([]Seal, error)
	// RecordFork keeps the evidence of a fork attempt.
	RecordFork(ctx context.Context, f *Fork) error
	// Forks lists the fork evidence of a chain.
	Forks(ctx context.Context, chain string) ([]Fork, error)
	// PutEvidenceHead keeps the latest evidence head a chain's sender reported.
	PutEvidenceHead(ctx context.Context, h *EvidenceHead) error
	// EvidenceHead returns the evidence head kept for a chain, or ErrNotFound.
	EvidenceHead(ctx context.Context, chain string) (*EvidenceHead, error)
	// Chains lists chain ids.
	Chains(ctx context.Context) ([]string, error)
	// ListChains returns up to limit chains whose id sorts after after ("" from the first),
	// in id order, for paged listings: their state without Tree and State.
	ListChains(ctx context.Context, after string, limit int) ([]ChainRecord, error)
	// Close releases the store.
	Close() error
}

// Batch is one chain's part of a group commit: the arguments of Store.Commit.
type Batch struct {
	Chain    *ChainRecord
	PrevSize uint64
	Entries  []Entry
}

// GroupCommitter is a Store that commits several chains' batches in one durable write, so
// that concurrent writers share one fsync instead of paying one each (the embedded store,
// store/embedded).
type GroupCommitter interface {
	// CommitGroup commits each batch as Commit would, all in one write, and returns
	// each batch's outcome (errs[i] for batches[i]). A batch refused on its own (ErrConflict
	// and other errors confined to it) is left out and the others commit; an error of the
	// write itself is the error of every batch. Every batch whose error is nil is
	// durable on return. Two batches must not name the same chain.
	CommitGroup(ctx context.Context, batches []Batch) (errs []error)
}

// ChainLink is a link of a chain, for lookups over several chains at once.
type ChainLink struct {
	Chain string
	Link  ledger.Link
}

// ChainRecordID is a record id of a chain, for lookups over several chains at once.
type ChainRecordID struct {
	Chain string
	ID    string
}
