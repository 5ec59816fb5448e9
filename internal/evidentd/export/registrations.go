package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// ErrNoRegistrations is returned by Exporter.Registrations when the ledger store keeps no
// SCRAPI registrations.
var ErrNoRegistrations = errors.New("export: this ledger store keeps no SCITT registrations")

// Registrations writes an offline bundle of SCITT registrations to w (the scitt/
// section, docs/bundle.md): the registered statements of issuer sel ("all" for every
// issuer) as transparent statements, and every registration policy statement with the
// interval it was in force, each with a receipt cut from the latest checkpoint, so the
// verifier replays every registration decision against the policy in force at the time.
func (x *Exporter) Registrations(ctx context.Context, w io.Writer, sel string) error {
	lister, ok := x.c.Store.(store.RegistrationLister)
	if !ok {
		return ErrNoRegistrations
	}
	if sel == "" {
		sel = "all"
	}
	iss := sel
	if sel == "all" {
		iss = ""
	}
	pols, err := lister.Registered(ctx, store.KindPolicy, "")
	if err != nil {
		return err
	}
	stmts, err := lister.Registered(ctx, store.KindStatement, iss)
	if err != nil {
		return err
	}
	bw, exported := x.newBundle(w)
	l := x.c.Service.Log()
	if err := x.writeTrust(bw); err != nil { // trust/ files (trust.go)
		return err
	}
	cp, c, err := x.latestCheckpoint(ctx)
	if err != nil {
		return err
	}
	transparent := func(reg store.Registration) ([]byte, error) {
		if reg.LogIndex >= c.Size {
			return nil, fmt.Errorf("registration %s at log index %d is beyond the latest checkpoint (size %d)", reg.ID, reg.LogIndex, c.Size)
		}
		rcpt, err := x.c.Service.Receipt(ctx, reg.LogIndex, cp)
		if err != nil {
			return nil, fmt.Errorf("registration %s: %w", reg.ID, err)
		}
		return receipts.AttachReceipts(reg.Statement, rcpt)
	}
	idx := bundle.SCITTIndex{Format: bundle.SCITTFormat, Selection: sel, Policies: []bundle.SCITTPolicy{}, Statements: []bundle.SCITTStatement{}}
	for i, p := range pols {
		st, err := receipts.ParseStatement(p.Statement)
		if err != nil {
			return fmt.Errorf("policy %s: %w", p.ID, err)
		}
		from := time.Unix(st.Claims.IssuedAt, 0).UTC().Format(time.RFC3339)
		if i > 0 {
			prev := &idx.Policies[i-1]
			until := p.LogIndex
			prev.InForce.UntilIndex, prev.InForce.Until = &until, from
		}
		ts, err := transparent(p)
		if err != nil {
			return err
		}
		if err := bw.WriteFile(bundle.SCITTPolicyFile(i), ts); err != nil {
			return err
		}
		idx.Policies = append(idx.Policies, bundle.SCITTPolicy{ID: p.ID, File: bundle.SCITTPolicyFile(i), LogIndex: p.LogIndex,
			InForce: bundle.SCITTInterval{FromIndex: p.LogIndex, From: from}})
	}
	for _, r := range stmts {
		ts, err := transparent(r)
		if err != nil {
			return err
		}
		if err := bw.WriteFile(bundle.SCITTStatementFile(r.ID), ts); err != nil {
			return err
		}
		idx.Statements = append(idx.Statements, bundle.SCITTStatement{ID: r.ID, File: bundle.SCITTStatementFile(r.ID), Issuer: r.Issuer, Policy: r.PolicyID, LogIndex: r.LogIndex})
	}
	ib, err := idx.Marshal()
	if err != nil {
		return err
	}
	if err := bw.WriteFile(bundle.SCITTIndexFile, ib); err != nil {
		return err
	}
	if len(pols)+len(stmts) > 0 {
		if err := bw.WriteFile(bundle.CheckpointFile(c.Size), cp); err != nil {
			return err
		}
	}
	return bw.Close(bundle.Manifest{
		Producer: x.c.Producer,
		Created:  ledger.Timestamp(exported),
		Log:      bundle.LogInfo{Origin: l.Origin()},
		Chains:   []bundle.ChainRef{},
	})
}
