package cop

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/evident-log/evident/ledger"
)

var _ ledger.BundleChecker = Adapter{}

// Names of the verifier checks the COP profile runs.
const (
	CheckLedger  ledger.CheckName = "cop.ledger"  // the node ledger beside the chain (CheckBundle)
	CheckParents ledger.CheckName = "cop.parents" // parentEventIds: no cycle, parents the evidence holds (State.Findings)
)

// maxNodeKeyFile bounds the size of the bundle's node key file.
const maxNodeKeyFile = 1 << 20

// CheckBundle verifies the COP Ledger (COP 1.0 §9.6–9.7) Evident exported beside a cop/1.0
// chain: every record's index, prevHash chain and node signature (key from the bundle's
// trust/cop-nodes.json), and record i against entry i of the chain — same eventId, topicId =
// the chain id, eventHash = the event's recomputed copHash, createdAt = the entry's arrival —
// with exactly one record per entry. Ledger and entries are streamed side by side, so memory
// stays bounded. It returns one verdict, under CheckLedger.
func (Adapter) CheckBundle(ctx context.Context, ch ledger.BundleChain) []ledger.Verdict {
	name := LedgerFile(ch.Dir())
	c := ledger.Verdict{Check: CheckLedger, Where: name}
	if !ch.Listed(name) {
		c.Severity, c.Code, c.Where = ledger.Notice, CodeLedgerAbsent, ""
		c.Detail = "the bundle carries no COP Ledger for this Topic (" + name + "): the node's ledger is not evaluated"
		return []ledger.Verdict{c}
	}
	nodes, err := nodeKeys(ch)
	if err != nil {
		ch.MarkRead(name)
		c.Severity, c.Code, c.Where = ledger.Notice, CodeLedgerAbsent, NodesFile
		if ch.Listed(NodesFile) {
			c.Severity, c.Code = ledger.Critical, ledger.CodeTrustInvalid
		}
		c.Detail = "no usable COP node key, so the ledger's signatures cannot be checked: " + err.Error()
		return []ledger.Verdict{c}
	}
	chk := &LedgerCheck{Keys: map[string]crypto.PublicKey{}, RequireSignature: true}
	nodeOf := map[string]string{}
	for _, k := range nodes {
		chk.Keys[k.KeyID] = k.Public
		nodeOf[k.KeyID] = k.NodeID
	}
	lr, err := ch.Lines(name)
	if err != nil {
		c.Severity, c.Code, c.Detail = ledger.Critical, ledger.CodeFileMissing, err.Error()
		return []ledger.Verdict{c}
	}
	defer lr.Close()
	er, err := ch.Entries()
	if err != nil {
		c.Severity, c.Code, c.Detail = ledger.Notice, ledger.CodeFileMissing, "the chain's entries cannot be read, so the ledger is not compared with them: "+err.Error()
		return []ledger.Verdict{c}
	}
	defer er.Close()
	broken := func(code ledger.Code, line int, format string, args ...any) []ledger.Verdict {
		c.Severity, c.Code, c.Where = ledger.Critical, code, fmt.Sprintf("%s:%d", name, line)
		c.Detail = fmt.Sprintf(format, args...)
		return []ledger.Verdict{c}
	}
	notReplayed := func(format string, args ...any) []ledger.Verdict {
		c.Severity, c.Code = ledger.Notice, ledger.CodeNotReplayed
		c.Detail = fmt.Sprintf(format, args...)
		return []ledger.Verdict{c}
	}
	signers := map[string]bool{}
	var n int
	for {
		if n%4096 == 0 {
			if ctx.Err() != nil {
				return nil
			}
		}
		l, lerr := lr.Next()
		entry, eerr := er.Next()
		if lerr == io.EOF && eerr == io.EOF {
			break
		}
		n++
		switch {
		case lerr == io.EOF:
			return broken(CodeLedgerMismatch, n, "the ledger ends after %d record(s) but the chain holds more entries: entry %d has no ledger record", n-1, n-1)
		case eerr == io.EOF:
			return broken(CodeLedgerMismatch, n, "the ledger holds a record %d for which the chain has no entry", n-1)
		case lerr != nil:
			return broken(CodeLedgerBroken, n, "cannot read ledger record %d: %v", n-1, lerr)
		case errors.Is(eerr, ledger.ErrNotEntry):
			return notReplayed("entry %d is not an entry line (chain.entries says why): the ledger was checked against the chain up to there", n-1)
		case eerr != nil:
			return notReplayed("entry %d cannot be read (%v): the ledger was checked against the chain up to there", n-1, eerr)
		}
		ev, err := Parse(entry.Record)
		if err != nil {
			return notReplayed("entry %d is not a COP Event (chain.entries says why): the ledger was checked against the chain up to there", n-1)
		}
		chk.Events = map[string][]byte{ev.ID: entry.Record}
		if err := chk.Next(l); err != nil {
			return broken(CodeLedgerBroken, n, "%v", err)
		}
		r := chk.Last
		at, terr := time.Parse(time.RFC3339Nano, r.CreatedAt)
		switch {
		case r.Index != entry.Seq:
			return broken(CodeLedgerMismatch, n, "ledger index %d stands beside entry %d: Evident's ledger has one record per entry from index 0", r.Index, entry.Seq)
		case r.EventID != ev.ID:
			return broken(CodeLedgerMismatch, n, "ledger record %d names event %.80q, entry %d holds event %.80q", r.Index, r.EventID, entry.Seq, ev.ID)
		case r.TopicID != ch.ID():
			return broken(CodeLedgerMismatch, n, "ledger record %d names Topic %.80q, not this chain", r.Index, r.TopicID)
		case terr != nil || !at.Equal(entry.Arrival):
			return broken(CodeLedgerMismatch, n, "ledger record %d has createdAt %.40q, entry %d arrived at %s", r.Index, r.CreatedAt, entry.Seq, entry.Arrival.UTC().Format(time.RFC3339Nano))
		case r.NodeID != nodeOf[r.KeyID]:
			return broken(CodeLedgerMismatch, n, "ledger record %d names node %.80q, but its key %.80q belongs to node %.80q", r.Index, r.NodeID, r.KeyID, nodeOf[r.KeyID])
		}
		signers[r.KeyID+" (node "+r.NodeID+")"] = true
	}
	if n == 0 {
		c.Severity, c.Code, c.Detail = ledger.Notice, CodeLedgerAbsent, "the chain and its ledger are empty"
		return []ledger.Verdict{c}
	}
	c.Detail = fmt.Sprintf("%d COP Ledger record(s) (§9.6): index 0..%d, prevHash chain from genesis, every node signature verified (key taken from %s: compare it with the node's published key), and record i matches entry i (eventId, topicId, eventHash = recomputed copHash, createdAt = arrival)",
		n, n-1, NodesFile)
	for s := range signers {
		c.Evidence = append(c.Evidence, "signed by "+s)
	}
	return []ledger.Verdict{c}
}

// nodeKeys reads the bundle's trust/cop-nodes.json.
func nodeKeys(ch ledger.BundleChain) ([]NodeKey, error) {
	if !ch.Listed(NodesFile) {
		return nil, fmt.Errorf("the bundle has no %s", NodesFile)
	}
	b, err := ch.ReadFile(NodesFile, maxNodeKeyFile)
	if err != nil {
		return nil, err
	}
	return ParseNodeKeys(b)
}
