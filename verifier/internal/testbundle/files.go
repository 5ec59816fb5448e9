package testbundle

import (
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/receipts"
)

// writeFiles writes the bundle's files besides the seals: the entries, the checkpoints (with
// Options.CheckpointFiles), the log key and the issuers' COSE keys; and hands the service's
// keys and log to the Bundle.
func (bd *builder) writeFiles() {
	bd.tb.Helper()
	b := bd.b
	if bd.o.CheckpointFiles {
		for size, cp := range bd.checkpoints {
			b.Files[bundle.CheckpointFile(size)] = cp
		}
	}
	b.Files[b.EntriesFile()] = bd.lines.Bytes()
	b.Files[bundle.LogKeyFile] = []byte(bd.vkey + "\n")
	k1, err := receipts.COSEKey(bd.otherIssuer.Public())
	bd.must(err)
	k2, err := receipts.COSEKey(bd.issuer.Public())
	bd.must(err)
	ks, err := cbor.Marshal([]cbor.RawMessage{k1, k2})
	bd.must(err)
	b.Files[bundle.IssuersFile] = ks

	b.Issuer, b.NoteSigner = bd.issuer, bd.noteSigner
	b.LogTree = bd.tree
}

// writeManifest writes the manifest: the chain as built and the digests of the files.
func (bd *builder) writeManifest() {
	b, o, chain := bd.b, bd.o, bd.chain
	b.Manifest = bundle.Manifest{
		Format:   bundle.Format,
		Producer: "testbundle",
		Created:  ledger.Timestamp(Base.Add(time.Hour)),
		Scope:    bundle.Scope{Chain: o.ChainID},
		Log:      bundle.LogInfo{Origin: b.Origin},
		Chains: []bundle.ChainRef{{ID: o.ChainID, Dir: b.Dir, Profile: chap.Profile, Size: chain.Size, Head: chain.Head,
			Root: ledger.RootString(chain.Root())}},
	}
	b.Digests()
}
