// Package profile lists the profile adapters Evident serves, so evidentd and the offline
// verifier replay exactly the same set. The first is the default for new chains.
package profile

import (
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/cheq"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/owp"
)

// All returns every profile adapter, the default (CHAP 0.3) first: OWP-2, COP 1.0, CHEQ and
// ChiefLab follow (docs/profiles/).
func All() []ledger.Profile {
	return []ledger.Profile{chap.Adapter{}, owp.Adapter{}, cop.Adapter{}, cheq.Adapter{}, chieflab.Adapter{}}
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
