package cop

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/service"
)

// What COP adds to evidentd (docs/profiles/cop.md, "COP Ledger"): the node key, the node id
// setting, the ledger route of a Topic and the ledger files of an export bundle.
const (
	// NodeKeyFile is the node key evidentd signs COP Ledger records with, under <data>/keys.
	// It is Ed25519 (deterministic signatures: the ledger is re-derived from the stored
	// entries whenever it is read); losing it changes every ledger signature, so it is
	// backed up with the other keys.
	NodeKeyFile = "cop-node.key"
	// NodeIDSetting is the evidentd flag naming the nodeId of the records (EVIDENT_COP_NODE_ID);
	// by default urn:cop:node:<origin>.
	NodeIDSetting = "cop-node-id"
	// LedgerRoute is the path segment of a Topic's ledger: GET /v1/chains/{topic}/cop-ledger.
	LedgerRoute = "cop-ledger"
	// CodeNotCOP is the problem code of a COP Ledger asked of a chain that is not a COP Topic.
	CodeNotCOP ledger.Code = "not_cop"
	// NodesFile lists, in a bundle, the public keys of the COP nodes whose ledgers the bundle
	// carries (format evident-cop-nodes/v1); present when a COP ledger is.
	NodesFile = "trust/cop-nodes.json"
)

// LedgerFile returns the path in a bundle of a COP Topic's ledger (COP 1.0 §9.6), given the
// chain's directory: one JSON object per line, record i for the chain's entry i.
func LedgerFile(dir string) string { return "chains/" + dir + "/cop-ledger.jsonl" }

var _ service.Provider = Adapter{}

// Settings returns COP's one setting, the node id.
func (Adapter) Settings() []service.Setting {
	return []service.Setting{{Name: NodeIDSetting, Env: "EVIDENT_COP_NODE_ID",
		Usage: "nodeId of the COP Ledger records evidentd signs with keys/" + NodeKeyFile + " (default urn:cop:node:<origin>)"}}
}

// KeyFiles returns COP's node key.
func (Adapter) KeyFiles() []service.KeyFile {
	return []service.KeyFile{{Name: NodeKeyFile, Purpose: "COP node key: signs COP Ledger records"}}
}

// Open returns the COP node of one evidentd: id the node id setting (default
// urn:cop:node:<origin>), key the node key file.
func (Adapter) Open(env service.Env) (service.Extension, error) {
	key, err := env.Key(NodeKeyFile)
	if err != nil {
		return nil, fmt.Errorf("cop node key: %w", err)
	}
	id := env.Settings[NodeIDSetting]
	if id == "" {
		id = "urn:cop:node:" + env.Origin
	}
	n, err := NewNode(id, key)
	if err != nil {
		return nil, err
	}
	return nodeService{n}, nil
}

// nodeService is COP's extension of evidentd: the node's ledger, served and exported.
type nodeService struct{ node *Node }

func (s nodeService) Routes() []service.Route {
	return []service.Route{{
		Path: LedgerRoute, OperationID: "getCOPLedger", Summary: "The signed COP Ledger of a COP Topic (JSON Lines)",
		ContentType: "application/jsonl", WrongProfile: string(CodeNotCOP),
		Serve: func(ctx context.Context, c service.Chain, w io.Writer) error {
			_, err := s.WriteLedger(ctx, w, c)
			return err
		},
	}}
}

// WriteLedger writes the COP Ledger (COP 1.0 §9.6) records of a Topic's entries up to its
// size to w as JSON Lines, signed by the node key, and returns how many it wrote. The records
// are derived from the stored entries at read time: the node key is Ed25519, whose
// signatures are deterministic, so the ledger of an entry never changes once it is durable.
// c is a COP Topic: evidentd serves the route and exports the files for those only.
func (s nodeService) WriteLedger(ctx context.Context, w io.Writer, c service.Chain) (uint64, error) {
	lw := NewLedgerWriter(*s.node)
	buf := bufio.NewWriterSize(w, 1<<16)
	var n uint64
	err := c.Entries(ctx, func(e ledger.Entry) error {
		if e.Seq != n {
			return fmt.Errorf("cop ledger: entry %d where %d was expected", e.Seq, n)
		}
		line, err := lw.Append(e.Record, e.Arrival)
		if err != nil {
			return fmt.Errorf("cop ledger: entry %d: %w", e.Seq, err)
		}
		buf.Write(line)
		if err := buf.WriteByte('\n'); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, buf.Flush()
}

// Export adds each Topic's ledger and, once, the node key file.
func (s nodeService) Export(ctx context.Context, chains []service.Chain, b service.Bundle) error {
	for _, c := range chains {
		lf, err := b.Create(LedgerFile(c.Dir()))
		if err != nil {
			return err
		}
		if n, err := s.WriteLedger(ctx, lf, c); err != nil {
			return err
		} else if n != c.Size() {
			return fmt.Errorf("cop ledger of %s: %d records for %d entries", c.ID(), n, c.Size())
		}
	}
	kb, err := MarshalNodeKeys([]NodeKey{{NodeID: s.node.ID, KeyID: s.node.KeyID, Public: s.node.Signer.Public()}})
	if err != nil {
		return err
	}
	return b.WriteFile(NodesFile, kb)
}
