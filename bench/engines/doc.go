// Package engines measures two embedded pure-Go key-value engines, Pebble
// (github.com/cockroachdb/pebble/v2) and Badger (github.com/dgraph-io/badger/v4),
// on the write pattern of the ledger store's commit: per envelope an entry, a
// record-id key, a link key and two attribute index keys, plus the chain's
// state key once per batch, written as one atomic fsynced batch after a point
// lookup of each record id (expected to miss) and of the chain's state.
//
// It is a nested module so that neither engine enters the root go.mod. The
// package holds only the workload and a thin adapter per engine; the figures
// come from its benchmarks (see README.md).
package engines
