package server

import (
	"github.com/evident-log/evident/bundle"
)

// exportKeyHistory writes trust/key-history.json and replaces *issuers with the key set of
// every key the service ever used (current and retired), so that seals and receipts
// signed before a rotation verify in a bundle exported after it. Without a key ring (no
// SCITT configuration) the bundle keeps the single current key.
func (s *Server) exportKeyHistory(bw *bundle.Writer, issuers *[]byte) error {
	if s.c.SCITT == nil || s.c.SCITT.Keys == nil {
		return nil
	}
	ks, err := s.c.SCITT.Keys.KeySet()
	if err != nil {
		return err
	}
	h, err := s.c.SCITT.Keys.History().Marshal()
	if err != nil {
		return err
	}
	if err := bw.WriteFile(bundle.KeyHistoryFile, h); err != nil {
		return err
	}
	*issuers = ks
	return nil
}
