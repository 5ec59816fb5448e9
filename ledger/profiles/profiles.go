// Package profiles lists the profile adapters Evident serves, so evidentd and the offline
// verifier replay exactly the same set. The first is the default for new chains.
package profiles

import (
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/chap"
)

// All returns every profile adapter, the default (CHAP 0.3) first.
func All() []ledger.Profile {
	return []ledger.Profile{chap.Adapter{}}
}

// Lookup returns the adapter of a profile name.
func Lookup(name string) (ledger.Profile, bool) {
	for _, p := range All() {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}
