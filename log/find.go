package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
)

// Find looks for entry among the log's entries at index from and after, and returns the
// index of its first copy. It first waits, bounded by ctx, until everything sequenced so
// far is integrated, so that an entry whose appender stopped before it learnt the index
// (a crash, a canceled request, a replica killed) is found too. Entries are read from the
// entry bundles, 256 at a time.
func (l *Log) Find(ctx context.Context, entry []byte, from uint64) (index uint64, found bool, err error) {
	if len(entry) != EntrySize {
		return 0, false, fmt.Errorf("%w: %d bytes, want %d", ErrInvalidEntry, len(entry), EntrySize)
	}
	next, err := l.reader.NextIndex(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("log: next index: %w", err)
	}
	size, err := l.awaitIntegrated(ctx, next)
	if err != nil {
		return 0, false, err
	}
	for bi := from / layout.EntryBundleWidth; bi*layout.EntryBundleWidth < size; bi++ {
		raw, err := l.readEntryBundle(ctx, bi, layout.PartialTileSize(0, bi, size))
		if err != nil {
			return 0, false, fmt.Errorf("log: reading entry bundle %d: %w", bi, err)
		}
		var b api.EntryBundle
		if err := b.UnmarshalText(raw); err != nil {
			return 0, false, fmt.Errorf("log: parsing entry bundle %d: %w", bi, err)
		}
		for i, e := range b.Entries {
			idx := bi*layout.EntryBundleWidth + uint64(i)
			if idx >= from && idx < size && bytes.Equal(e, entry) {
				return idx, true, nil
			}
		}
	}
	return 0, false, nil
}

// awaitIntegrated waits until the log's integrated size reaches n and returns it.
func (l *Log) awaitIntegrated(ctx context.Context, n uint64) (uint64, error) {
	for {
		size, err := l.reader.IntegratedSize(ctx)
		if err != nil {
			return 0, fmt.Errorf("log: integrated size: %w", err)
		}
		if size >= n {
			return size, nil
		}
		if err := l.sleep(ctx); err != nil {
			return 0, fmt.Errorf("log: waiting for entries up to %d to be integrated (at %d): %w", n, size, err)
		}
	}
}

// CheckpointCovering waits, bounded by ctx, for a published checkpoint that covers index
// (its size is larger) and returns it: how a caller that did not append an entry itself
// gets the checkpoint to cut its receipt from.
func (l *Log) CheckpointCovering(ctx context.Context, index uint64) ([]byte, error) {
	for {
		raw, err := l.Checkpoint(ctx)
		if err != nil && !errors.Is(err, ErrNoCheckpoint) {
			return nil, err
		}
		if err == nil {
			cp, err := l.parse(raw)
			if err != nil {
				return nil, err
			}
			if cp.Size > index {
				return raw, nil
			}
		}
		if err := l.sleep(ctx); err != nil {
			return nil, fmt.Errorf("log: waiting for a checkpoint covering %d: %w", index, err)
		}
	}
}

// sleep waits one poll interval, or until ctx or the log ends.
func (l *Log) sleep(ctx context.Context) error {
	t := time.NewTimer(l.poll)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.bgCtx.Done():
		return ErrClosed
	}
}
