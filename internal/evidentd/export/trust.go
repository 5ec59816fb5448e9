package export

import (
	"context"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	tlog "github.com/transparency-dev/formats/log"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
)

// sealPayload reads the seal JSON out of a stored seal statement.
func sealPayload(stmt []byte) (ledger.Seal, error) {
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		return ledger.Seal{}, fmt.Errorf("stored seal statement: %w", err)
	}
	return ledger.ParseSeal(st.Payload)
}

// writeTrust writes the trust files every bundle carries: the log key, the witness
// policy, the issuers' key set and the key history.
func (x *Exporter) writeTrust(bw *bundle.Writer) error {
	l := x.c.Service.Log()
	if err := bw.WriteFile(bundle.LogKeyFile, []byte(l.VerifierKey()+"\n")); err != nil {
		return err
	}
	if wp := l.WitnessPolicy(); wp != nil {
		if err := bw.WriteFile(bundle.WitnessPolicyFile, []byte(wp.String())); err != nil {
			return err
		}
	}
	if err := x.exportPQKey(bw); err != nil { // trust/log-mldsa.vkey
		return err
	}
	ck, err := receipts.COSEKey(x.c.Service.Signer().Public())
	if err != nil {
		return err
	}
	ks, err := cbor.Marshal([]cbor.RawMessage{ck})
	if err != nil {
		return err
	}
	if err := x.exportKeyHistory(bw, &ks); err != nil { // every key, retired ones kept (below)
		return err
	}
	return bw.WriteFile(bundle.IssuersFile, ks)
}

// exportPQKey writes trust/log-mldsa.vkey when the log signs checkpoints with ML-DSA-44.
func (x *Exporter) exportPQKey(bw *bundle.Writer) error {
	vk := x.c.Service.Log().PostQuantumVerifierKey()
	if vk == "" {
		return nil
	}
	return bw.WriteFile(bundle.LogPQKeyFile, []byte(vk+"\n"))
}

// latestCheckpoint returns the log's latest checkpoint, verified, with its parsed form.
func (x *Exporter) latestCheckpoint(ctx context.Context) ([]byte, *tlog.Checkpoint, error) {
	l := x.c.Service.Log()
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	c, err := log.VerifyCheckpoint(cp, l.VerifierKey())
	if err != nil {
		return nil, nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	return cp, c, nil
}

// exportKeyHistory writes trust/key-history.json and replaces *issuers with the key set of
// every key the service ever used (current and retired), so that seals and receipts
// signed before a rotation verify in a bundle exported after it. Without a key ring (no
// SCITT configuration) the bundle keeps the single current key.
func (x *Exporter) exportKeyHistory(bw *bundle.Writer, issuers *[]byte) error {
	if x.c.Keys == nil {
		return nil
	}
	ks, err := x.c.Keys.KeySet()
	if err != nil {
		return err
	}
	h, err := x.c.Keys.History().Marshal()
	if err != nil {
		return err
	}
	if err := bw.WriteFile(bundle.KeyHistoryFile, h); err != nil {
		return err
	}
	*issuers = ks
	return nil
}
