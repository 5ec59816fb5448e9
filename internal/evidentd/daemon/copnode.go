package daemon

import (
	"fmt"
	"path/filepath"

	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// COPNodeKeyFile is the node key evidentd signs COP Ledger records with, under <data>/keys.
// It is Ed25519 (deterministic signatures: the ledger is re-derived from the stored entries
// whenever it is read) and is created on first start; losing it changes every ledger
// signature, so it is backed up with the other keys.
const COPNodeKeyFile = "cop-node.key"

// openCOPNode loads or creates the COP node key and returns the node evidentd writes COP
// Ledgers as: id cfg.COPNodeID (default urn:cop:node:<origin>), key id the key's RFC 9278
// JWK thumbprint URI.
func openCOPNode(cfg Config) (*cop.Node, error) {
	key, err := scitt.LoadOrCreateKey(filepath.Join(cfg.Data, "keys", COPNodeKeyFile), nil)
	if err != nil {
		return nil, fmt.Errorf("cop node key: %w", err)
	}
	id := cfg.COPNodeID
	if id == "" {
		id = "urn:cop:node:" + cfg.Origin
	}
	return cop.NewNode(id, key)
}
