package testbundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/receipts"
)

// Build makes a bundle. It fails tb on any error: the builder uses the real service code paths.
//
// In order: the chain's records are appended (chain.go) and the chain sealed at each size of
// Options.SealAt, each seal registered in the log after other statements (seals.go, log.go);
// then every seal gets its receipt from a signed checkpoint, and the bundle its files and
// manifest (files.go).
func Build(tb testing.TB, o Options) *Bundle {
	tb.Helper()
	bd := newBuilder(tb, o.withDefaults(tb))
	bd.appendRecords()
	bd.attachReceipts()
	bd.writeFiles()
	bd.writeManifest()
	return bd.b
}

// withDefaults fills in the zero fields of o and shifts its seal positions past the
// workspace.create that CreateKid puts first.
func (o Options) withDefaults(tb testing.TB) Options {
	tb.Helper()
	if o.ChainID == "" {
		o.ChainID = "ws-1"
	}
	if o.Participants == 0 {
		o.Participants = 3
	}
	if o.Entries == 0 {
		o.Entries = 24
	}
	if o.Entries < o.Participants+o.Unsigned {
		tb.Fatalf("testbundle: %d entries cannot hold %d joins and %d unsigned records", o.Entries, o.Participants, o.Unsigned)
	}
	if o.SealAt == nil {
		o.SealAt = []int{o.Entries}
	}
	if o.CreateKid != "" {
		shifted := make([]int, len(o.SealAt))
		for k, at := range o.SealAt {
			shifted[k] = at + 1
		}
		o.SealAt = shifted
	}
	if o.Filler == 0 {
		o.Filler = 3
	}
	if o.PayloadSize == 0 {
		o.PayloadSize = 64
	}
	return o
}

// builder holds what one Build makes as it goes: the chain and its entries.jsonl, the service's
// keys, the in-memory log with its checkpoints, and the seals waiting for their receipts.
type builder struct {
	tb testing.TB
	o  Options
	b  *Bundle

	// The chain.
	chain      *ledger.Chain
	ps         []*participant // the signing participants; a rotation changes one's key
	unsignedAt map[int]bool   // positions of the unsigned records
	rotateAt   int            // position of the key rotation, -1 for none
	sealAt     map[int]bool   // chain sizes at which a seal is made
	text       string         // every message's text
	own        ledger.Link    // the Coordinator's own chain head, when it differs from Evident's (UnchainedPrefix)
	lines      bytes.Buffer   // entries.jsonl
	enc        *json.Encoder  // writes lines

	// The service.
	issuer      *receipts.Signer // signs the seals and the receipts
	otherIssuer *receipts.Signer // another key in the issuers file
	vkey        string           // the log's verifier key
	noteSigner  note.Signer      // signs the log's checkpoints

	// The log.
	tree        *testonly.Tree
	filler      int               // other statements registered so far
	checkpoints map[uint64][]byte // signed checkpoints by tree size
	pending     []pendingSeal     // seals registered, in order, waiting for their receipts
	lastSeal    string            // link of the last seal's statement, the next seal's PrevSeal
}

// newBuilder starts a Build of o (defaults filled in): an empty chain, its participants and
// the positions of its unsigned records, key rotation and seals; the service's keys; an empty
// log.
func newBuilder(tb testing.TB, o Options) *builder {
	tb.Helper()
	bd := &builder{tb: tb, o: o, b: &Bundle{Files: map[string][]byte{}, Origin: Origin, Dir: bundle.ChainDir(o.ChainID)}}
	chain, err := ledger.NewChain(o.ChainID, chap.Adapter{})
	bd.must(err)
	bd.chain = chain
	bd.planChain()
	bd.serviceKeys()
	bd.tree = testonly.New(rfc6962.DefaultHasher)
	bd.checkpoints = map[uint64][]byte{}
	bd.enc = json.NewEncoder(&bd.lines)
	bd.enc.SetEscapeHTML(false)
	bd.text = strings.Repeat("evidence <&> ", o.PayloadSize/13+1)[:o.PayloadSize]
	bd.own = ledger.Genesis
	return bd
}

// planChain makes the participants with their first keys and places the unsigned records
// (spread evenly after the joins), participant 1's key rotation (half way through, never on an
// unsigned record) and the seals.
func (bd *builder) planChain() {
	o := bd.o
	bd.ps = make([]*participant, o.Participants)
	for i := range bd.ps {
		bd.ps[i] = &participant{uri: fmt.Sprintf("urn:chap:agent:%d", i), kid: fmt.Sprintf("k%d-1", i), priv: key(fmt.Sprintf("p%d", i))}
	}
	bd.unsignedAt = map[int]bool{}
	if o.Unsigned > 0 {
		span := o.Entries - o.Participants
		for k := range o.Unsigned {
			bd.unsignedAt[o.Participants+k*span/o.Unsigned] = true
		}
	}
	bd.rotateAt = -1
	if o.Rotate && o.Participants > 1 {
		bd.rotateAt = o.Participants + (o.Entries-o.Participants)/2
		for bd.unsignedAt[bd.rotateAt] {
			bd.rotateAt++
		}
	}
	bd.sealAt = map[int]bool{}
	for _, s := range o.SealAt {
		bd.sealAt[s] = true
	}
}

// serviceKeys derives the service's keys from Options.Service: the issuer that signs seals and
// receipts, another issuer the issuers file also lists, and the log's checkpoint key.
func (bd *builder) serviceKeys() {
	var err error
	bd.issuer, err = receipts.NewSigner(key("issuer" + bd.o.Service))
	bd.must(err)
	bd.otherIssuer, err = receipts.NewSigner(key("other issuer"))
	bd.must(err)
	var skey string
	skey, bd.vkey, err = logKey(bd.b.Origin, bd.o.Service)
	bd.must(err)
	bd.noteSigner, err = note.NewSigner(skey)
	bd.must(err)
}

// must fails the test on err.
func (bd *builder) must(err error) {
	bd.tb.Helper()
	if err != nil {
		bd.tb.Fatal(err)
	}
}
