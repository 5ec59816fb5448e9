package export

import (
	"context"
	"fmt"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/service"
)

// exportExtensions lets each profile's extension add its files for the bundle's chains of
// its profile (the COP Ledger and its node key), in the order of the registry.
func (x *Exporter) exportExtensions(ctx context.Context, bw *bundle.Writer, refs []bundle.ChainRef) error {
	for _, ext := range x.c.Extensions {
		var chains []service.Chain
		for _, ref := range refs {
			if ref.Profile == ext.Profile {
				chains = append(chains, x.Chain(ref.ID, ref.Profile, ref.Size))
			}
		}
		if len(chains) == 0 {
			continue
		}
		if err := ext.Export(ctx, chains, bw); err != nil {
			return fmt.Errorf("export: %s files: %w", ext.Profile, err)
		}
	}
	return nil
}

// Chain returns a chain as the profiles' extensions read it: its first size entries, read
// from the store page by page as an export reads them (entryPages).
func (x *Exporter) Chain(id, profile string, size uint64) service.Chain {
	return &extChain{st: x.c.Store, id: id, profile: profile, size: size}
}

type extChain struct {
	st          store.Store
	id, profile string
	size        uint64
}

func (c *extChain) ID() string      { return c.id }
func (c *extChain) Profile() string { return c.profile }
func (c *extChain) Size() uint64    { return c.size }
func (c *extChain) Dir() string     { return bundle.ChainDir(c.id) }

func (c *extChain) Entries(ctx context.Context, fn func(ledger.Entry) error) error {
	for es, err := range entryPages(ctx, c.st, c.id, c.size) {
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := fn(ledger.Entry{Seq: e.Seq, Record: e.Record, Arrival: e.Arrival, Prev: e.Prev, Link: e.Link}); err != nil {
				return err
			}
		}
	}
	return nil
}
