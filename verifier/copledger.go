package verifier

import (
	"bufio"
	"crypto"
	"fmt"
	"io"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// Codes of the COP Ledger check (docs/profiles/cop.md, "COP Ledger").
const (
	CodeCOPLedgerAbsent   = "cop_ledger_absent"   // a cop/1.0 chain without its ledger, or no node key to check it
	CodeCOPLedgerBroken   = "cop_ledger_broken"   // a ledger record fails index, prevHash, eventHash or signature
	CodeCOPLedgerMismatch = "cop_ledger_mismatch" // ledger and chain disagree (event, topic, time, count)
)

// copLedgerChecks verifies the COP Ledger (COP 1.0 §9.6–9.7) Evident exported beside a cop/1.0
// chain: every record's index, prevHash chain and node signature (key from trust/cop-nodes.json),
// and record i against entry i of the chain — same eventId, topicId = the chain id, eventHash
// = the event's recomputed copHash, createdAt = the entry's arrival — with exactly one record
// per entry. Ledger and entries are streamed side by side, so memory stays bounded.
func (v *verifier) copLedgerChecks(ref bundle.ChainRef) []Check {
	if ref.Profile != cop.Profile {
		return nil
	}
	name := bundle.COPLedgerFile(ref.Dir)
	c := Check{Name: "cop.ledger", Chain: ref.ID, Where: name}
	if !v.listed(name) {
		c.Status, c.Code, c.Where = NotEvaluated, CodeCOPLedgerAbsent, ""
		c.Detail = "the bundle carries no COP Ledger for this Topic (" + name + "): the node's ledger is not evaluated"
		return []Check{c}
	}
	nodes, err := v.copNodeKeys()
	if err != nil {
		v.state(name).interpreted = true
		c.Status, c.Code, c.Where = NotEvaluated, CodeCOPLedgerAbsent, bundle.COPNodesFile
		if v.listed(bundle.COPNodesFile) {
			c.Status, c.Code = Broken, CodeTrust
		}
		c.Detail = "no usable COP node key, so the ledger's signatures cannot be checked: " + err.Error()
		return []Check{c}
	}
	chk := &cop.LedgerCheck{Keys: map[string]crypto.PublicKey{}, RequireSignature: true}
	nodeOf := map[string]string{}
	for _, k := range nodes {
		chk.Keys[k.KeyID] = k.Public
		nodeOf[k.KeyID] = k.NodeID
	}
	lf, err := v.open(name)
	if err != nil {
		c.Status, c.Code, c.Detail = Broken, CodeMissing, err.Error()
		return []Check{c}
	}
	defer lf.Close()
	ef, err := v.open(bundle.EntriesFile(ref.Dir))
	if err != nil {
		c.Status, c.Code, c.Detail = NotEvaluated, CodeMissing, "the chain's entries cannot be read, so the ledger is not compared with them: "+err.Error()
		return []Check{c}
	}
	defer ef.Close()
	lr, er := bufio.NewReaderSize(lf, MaxLineSize), bufio.NewReaderSize(ef, MaxLineSize)
	broken := func(code string, line int, format string, args ...any) []Check {
		c.Status, c.Code, c.Where = Broken, code, fmt.Sprintf("%s:%d", name, line)
		c.Detail = fmt.Sprintf(format, args...)
		return []Check{c}
	}
	signers := map[string]bool{}
	var n int
	for {
		if n%progressEvery == 0 {
			if err := v.ctx.Err(); err != nil {
				return nil
			}
		}
		l, lerr := readJSONLine(lr)
		e, eerr := readJSONLine(er)
		if lerr == io.EOF && eerr == io.EOF {
			break
		}
		n++
		switch {
		case lerr == io.EOF:
			return broken(CodeCOPLedgerMismatch, n, "the ledger ends after %d record(s) but the chain holds more entries: entry %d has no ledger record", n-1, n-1)
		case eerr == io.EOF:
			return broken(CodeCOPLedgerMismatch, n, "the ledger holds a record %d for which the chain has no entry", n-1)
		case lerr != nil:
			return broken(CodeCOPLedgerBroken, n, "cannot read ledger record %d: %v", n-1, lerr)
		case eerr != nil:
			c.Status, c.Code = NotEvaluated, CodeNotReplayed
			c.Detail = fmt.Sprintf("entry %d cannot be read (%v): the ledger was checked against the chain up to there", n-1, eerr)
			return []Check{c}
		}
		entry, err := parseEntryLine(e)
		if err != nil {
			c.Status, c.Code = NotEvaluated, CodeNotReplayed
			c.Detail = fmt.Sprintf("entry %d is not an entry line (chain.entries says why): the ledger was checked against the chain up to there", n-1)
			return []Check{c}
		}
		ev, err := cop.Parse(entry.Record)
		if err != nil {
			c.Status, c.Code = NotEvaluated, CodeNotReplayed
			c.Detail = fmt.Sprintf("entry %d is not a COP Event (chain.entries says why): the ledger was checked against the chain up to there", n-1)
			return []Check{c}
		}
		chk.Events = map[string][]byte{ev.ID: entry.Record}
		if err := chk.Next(l); err != nil {
			return broken(CodeCOPLedgerBroken, n, "%v", err)
		}
		r := chk.Last
		at, terr := time.Parse(time.RFC3339Nano, r.CreatedAt)
		switch {
		case r.Index != entry.Seq:
			return broken(CodeCOPLedgerMismatch, n, "ledger index %d stands beside entry %d: Evident's ledger has one record per entry from index 0", r.Index, entry.Seq)
		case r.EventID != ev.ID:
			return broken(CodeCOPLedgerMismatch, n, "ledger record %d names event %.80q, entry %d holds event %.80q", r.Index, r.EventID, entry.Seq, ev.ID)
		case r.TopicID != ref.ID:
			return broken(CodeCOPLedgerMismatch, n, "ledger record %d names Topic %.80q, not this chain", r.Index, r.TopicID)
		case terr != nil || !at.Equal(entry.Arrival):
			return broken(CodeCOPLedgerMismatch, n, "ledger record %d has createdAt %.40q, entry %d arrived at %s", r.Index, r.CreatedAt, entry.Seq, entry.Arrival.UTC().Format(time.RFC3339Nano))
		case r.NodeID != nodeOf[r.KeyID]:
			return broken(CodeCOPLedgerMismatch, n, "ledger record %d names node %.80q, but its key %.80q belongs to node %.80q", r.Index, r.NodeID, r.KeyID, nodeOf[r.KeyID])
		}
		signers[r.KeyID+" (node "+r.NodeID+")"] = true
	}
	if n == 0 {
		c.Status, c.Code, c.Detail = NotEvaluated, CodeCOPLedgerAbsent, "the chain and its ledger are empty"
		return []Check{c}
	}
	c.Status = Verified
	c.Detail = fmt.Sprintf("%d COP Ledger record(s) (§9.6): index 0..%d, prevHash chain from genesis, every node signature verified (key taken from %s: compare it with the node's published key), and record i matches entry i (eventId, topicId, eventHash = recomputed copHash, createdAt = arrival)",
		n, n-1, bundle.COPNodesFile)
	for s := range signers {
		c.Evidence = append(c.Evidence, "signed by "+s)
	}
	return []Check{c}
}

// copNodeKeys reads trust/cop-nodes.json.
func (v *verifier) copNodeKeys() ([]cop.NodeKey, error) {
	if !v.listed(bundle.COPNodesFile) {
		return nil, fmt.Errorf("the bundle has no %s", bundle.COPNodesFile)
	}
	b, err := v.readSmall(bundle.COPNodesFile, 1<<20)
	if err != nil {
		return nil, err
	}
	return cop.ParseNodeKeys(b)
}

// readJSONLine reads one newline-terminated line (without the newline), refusing lines over
// MaxLineSize; io.EOF only when nothing is left.
func readJSONLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		for err == bufio.ErrBufferFull {
			_, err = br.ReadSlice('\n')
		}
		return nil, fmt.Errorf("line over %d bytes", MaxLineSize)
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	return line, nil
}
