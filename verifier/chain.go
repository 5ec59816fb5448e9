package verifier

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
)

// chainState is a chain's head and tree root at one size.
type chainState struct {
	head ledger.Link
	root [32]byte
}

// sigFail is a record signature that did not verify.
type sigFail struct {
	seq  uint64
	code Code
	msg  string
}

// maxSigFails bounds the failures kept for the report (the lowest seqs win).
const maxSigFails = 8

// sigPool verifies record signatures on worker goroutines. Jobs travel in batches of
// sigBatch, so the replay and the workers meet (and wake each other) once per batch rather
// than once per record. The queue is bounded, so at most a few batches per worker are held at
// any time whatever the chain's length.
type sigPool struct {
	jobs  chan []sigJob
	free  chan []sigJob // emptied batches, for the replay to fill again
	batch []sigJob      // being filled by the replay
	wg    sync.WaitGroup
	ok    atomic.Uint64
	mu    sync.Mutex
	fails []sigFail // sorted by seq, at most maxSigFails
	nfail uint64
}

// sigBatch is how many signature jobs are handed to a worker at once.
const sigBatch = 64

// sigQueue is how many batches per worker may wait. Once every core is busy verifying, the
// replay gets a core back only when the scheduler preempts a worker (every 10 ms): the queue
// holds more work than that (8 × 64 signatures of ~45 µs each per worker, ~23 ms), so the
// workers never run dry while the replay waits for its turn.
const sigQueue = 8

type sigJob struct {
	seq    uint64
	verify func() error
	// unsigned: the record carries no signature of its own; verify checks only what it
	// vouches for (a CHAP join's pending workspace.create), so success is not counted as a
	// verified signature of this record.
	unsigned bool
}

func newSigPool(workers int) *sigPool {
	p := &sigPool{jobs: make(chan []sigJob, sigQueue*workers), free: make(chan []sigJob, (sigQueue+1)*workers+1),
		batch: make([]sigJob, 0, sigBatch)}
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for b := range p.jobs {
				p.run(b)
			}
		}()
	}
	return p
}

// run verifies one batch and returns it, emptied, for reuse.
func (p *sigPool) run(b []sigJob) {
	for _, j := range b {
		if err := j.verify(); err != nil {
			p.fail(j.seq, err)
		} else if !j.unsigned {
			p.ok.Add(1)
		}
	}
	clear(b) // drop the records the closures hold
	select {
	case p.free <- b[:0]:
	default:
	}
}

// add queues one job; a full batch goes to the workers.
func (p *sigPool) add(j sigJob) {
	p.batch = append(p.batch, j)
	if len(p.batch) == sigBatch {
		p.flush()
	}
}

// flush hands the batch being filled to the workers.
func (p *sigPool) flush() {
	if len(p.batch) == 0 {
		return
	}
	p.jobs <- p.batch
	select {
	case p.batch = <-p.free:
	default:
		p.batch = make([]sigJob, 0, sigBatch)
	}
}

func (p *sigPool) fail(seq uint64, err error) {
	code := ledger.CodeBadSignature
	var re *ledger.RecordError
	if errors.As(err, &re) {
		code = re.Code
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nfail++
	i := sort.Search(len(p.fails), func(i int) bool { return p.fails[i].seq > seq })
	if i >= maxSigFails {
		return
	}
	p.fails = append(p.fails, sigFail{})
	copy(p.fails[i+1:], p.fails[i:])
	p.fails[i] = sigFail{seq: seq, code: code, msg: err.Error()}
	if len(p.fails) > maxSigFails {
		p.fails = p.fails[:maxSigFails]
	}
}

// wait stops the pool once every queued signature is checked.
func (p *sigPool) wait() {
	p.flush()
	close(p.jobs)
	p.wg.Wait()
}

// replayResult is what replaying entries.jsonl established.
type replayResult struct {
	file          string
	total         uint64 // lines
	checked       uint64 // lines replayed
	unsigned      uint64
	unsignable    uint64 // records the protocol has nobody sign (ledger.Admission.Unsignable)
	firstUnsigned []uint64
	brk           *Check // the first break in sequence, nil when none
	brkSeq        uint64 // position of that break
	sigOK         uint64
	sigFails      []sigFail
	sigFailCount  uint64
	states        map[uint64]chainState // chain state at every size a seal claims
	chain         *ledger.Chain
	linkage       *linkageTrack
}

// complete reports whether every line was replayed without a break in sequence.
func (r *replayResult) complete() bool { return r.brk == nil }

// validUpTo is the number of leading entries with no break of any kind.
func (r *replayResult) validUpTo() uint64 {
	n := r.total
	if r.brk != nil {
		n = min(n, r.brkSeq)
	}
	if len(r.sigFails) > 0 {
		n = min(n, r.sigFails[0].seq)
	}
	return n
}

// replay streams a chain's entries.jsonl line by line through the profile and the ledger's
// chain rules, recomputing every link and the chain tree, and checks signatures on the pool.
// Memory stays bounded: one line, the profile state and the compact tree at a time (plus a
// 16-byte digest and the seq of each record id, to refuse reused ids as the service does:
// idSet) and the signatures queued for the workers.
func (v *verifier) replay(ref bundle.ChainRef, prof ledger.Profile, claimed map[uint64]bool) (*replayResult, error) {
	res := &replayResult{file: bundle.EntriesFile(ref.Dir), states: map[uint64]chainState{}, linkage: newLinkageTrack(ref)}
	chain, err := ledger.NewChain(ref.ID, prof)
	if err != nil {
		res.brk = &Check{Code: CodeUnknownProfile, Detail: err.Error(), Where: res.file}
		return res, nil
	}
	chain.Replay = true // the read API's attributes are not built: nothing here reads them
	res.chain = chain
	if claimed[0] {
		res.states[0] = chainState{head: chain.Head, root: chain.Root()}
	}
	f, err := v.open(res.file)
	if err != nil {
		res.brk = &Check{Code: CodeMissing, Detail: err.Error(), Where: res.file}
		return res, nil
	}
	defer f.Close()

	pool := newSigPool(v.o.Workers)
	poolDone := false
	defer func() {
		if !poolDone {
			pool.wait()
		}
	}()
	ids := newIDSet()
	br := NewLines(f, MaxLineSize(v.o.Limits))
	stage := "entries " + ref.ID
	breakAt := func(code Code, where, format string, args ...any) {
		res.brk = &Check{Code: code, Where: where, Detail: fmt.Sprintf(format, args...)}
		res.brkSeq = res.total - 1
		res.checked = res.total
	}
	for {
		line, tooLong, rerr := br.Next()
		if len(line) == 0 && !tooLong && rerr != nil {
			if rerr != io.EOF && res.brk == nil {
				res.total++
				breakAt(CodeRead, res.file, "cannot read entries: %v", rerr)
			}
			break
		}
		res.total++
		if res.total%progressEvery == 0 {
			v.progress(stage, res.total, ref.Size)
			if err := v.ctx.Err(); err != nil {
				return nil, err
			}
		}
		if res.brk == nil {
			// Lines after a break are only counted: nothing is formatted for them, so that
			// a file of millions of empty lines costs no memory per line.
			where := lineRef{file: res.file, n: res.total}
			switch {
			case tooLong:
				breakAt(CodeEntryTooLong, where.String(), "seq %d: %s", chain.Size, br.TooLong())
			case rerr != nil && rerr != io.EOF:
				breakAt(CodeRead, where.String(), "cannot read entries: %v", rerr)
			default:
				v.replayLine(res, chain, pool, ids, line, where, breakAt, claimed)
			}
		}
		if rerr != nil {
			break
		}
	}
	pool.wait()
	poolDone = true
	v.progress(stage, res.total, ref.Size)
	res.sigOK = pool.ok.Load()
	res.sigFails = pool.fails
	res.sigFailCount = pool.nfail
	if res.brk == nil {
		res.checked = res.total
	}
	return res, nil
}

// lineRef names one line of a chain's entries.jsonl; it is formatted only when a check
// reports it, never for a line that passes.
type lineRef struct {
	file string
	n    uint64 // 1-based
}

func (l lineRef) String() string { return fmt.Sprintf("%s:%d", l.file, l.n) }

// replayLine checks one line; on the first break it calls breakAt and the replay only counts from then on.
func (v *verifier) replayLine(res *replayResult, chain *ledger.Chain, pool *sigPool, ids *idSet,
	line []byte, at lineRef, breakAt func(code Code, where, format string, args ...any), claimed map[uint64]bool) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	seq := chain.Size
	e, err := parseEntryLine(line)
	if err != nil {
		breakAt(CodeEntryMalformed, at.String(), "seq %d: not an entry line: %v", seq, err)
		return
	}
	if e.Seq != seq {
		breakAt(CodeEntrySeq, at.String(), "line %d holds seq %d where seq %d was expected (an entry is missing, duplicated or out of order)", res.total, e.Seq, seq)
		return
	}
	// The line's bytes live in the reader's buffer; a profile may keep what it is given
	// (e.g. inside Admission.Verify, which runs later on the pool), so it gets a copy.
	var meta []byte
	if e.Meta != nil {
		meta = append([]byte(nil), e.Meta...)
	}
	// The record limits are the verifier's policy (Options.Limits), applied before the
	// profile, which parses whatever they let through.
	var a *ledger.Appended
	if err = v.o.Limits.Check(e.Record); err != nil {
		err = ledger.CanonicalRefusal(err)
	} else {
		a, err = chain.AppendStored(append([]byte(nil), e.Record...), meta, e.Arrival)
	}
	if err != nil {
		code := ledger.CodeMalformed
		var re *ledger.RecordError
		if errors.As(err, &re) {
			code = re.Code
		}
		breakAt(code, at.String(), "seq %d: record refused by %s: %v%s", seq, chain.Profile, err, limitHint(err, e.Record, v.o.Limits))
		return
	}
	if a.Prev != e.Prev {
		breakAt(CodeEntryPrev, at.String(), "seq %d: prev %s is not the recomputed chain head %s", seq, e.Prev, a.Prev)
		return
	}
	if a.Link != e.Link {
		breakAt(CodeEntryLink, at.String(), "seq %d: link %s is not the recomputed link %s (the record was altered)", seq, e.Link, a.Link)
		return
	}
	if id := a.Admission.RecordID; id != "" {
		if first, used := ids.add(id, seq); used {
			breakAt(ledger.CodeIDReused, at.String(), "seq %d: record id %.80q was already used at seq %d", seq, id, first)
			return
		}
	}
	res.linkage.observe(seq, a)
	unsigned := !a.Admission.Signed && !a.Admission.Unsignable
	if a.Admission.Verify != nil {
		// An unsigned record may still have something to verify (a CHAP join resolving a
		// pending workspace.create): it is checked, but counted unsigned below.
		pool.add(sigJob{seq: seq, verify: a.Admission.Verify, unsigned: unsigned})
	}
	switch {
	case a.Admission.Signed:
	case a.Admission.Unsignable:
		res.unsignable++
	default:
		res.unsigned++
		if len(res.firstUnsigned) < 5 {
			res.firstUnsigned = append(res.firstUnsigned, seq)
		}
	}
	if claimed[chain.Size] {
		res.states[chain.Size] = chainState{head: chain.Head, root: chain.Root()}
	}
}

// entryChecks turns a replay into checks.
func (res *replayResult) entryChecks(ref bundle.ChainRef) []Check {
	var checks []Check
	c := Check{Name: CheckChainEntries, Chain: ref.ID}
	if res.brk != nil {
		c.Status, c.Code, c.Detail, c.Where = Broken, res.brk.Code, res.brk.Detail, res.brk.Where
		c.Evidence = []string{fmt.Sprintf("first break at seq %d; %d entries replayed, %d after it not checked", res.brkSeq, res.checked, res.total-res.checked)}
	} else {
		c.Status = Verified
		c.Detail = fmt.Sprintf("%d entries replayed from genesis under %s: seq 0..%d in order, every record admitted by the profile's rules, prev and link recomputed", res.total, ref.Profile, int64(res.total)-1)
	}
	checks = append(checks, c)

	c = Check{Name: CheckChainSignatures, Chain: ref.ID}
	switch {
	case res.sigFailCount > 0:
		f := res.sigFails[0]
		c.Status, c.Code, c.Where = Broken, f.code, fmt.Sprintf("seq %d", f.seq)
		c.Detail = fmt.Sprintf("%d record signature(s) do not verify; the first at seq %d: %s", res.sigFailCount, f.seq, f.msg)
		for _, f := range res.sigFails {
			c.Evidence = append(c.Evidence, fmt.Sprintf("seq %d: %s", f.seq, f.code))
		}
	case res.sigOK > 0:
		c.Status = Verified
		c.Detail = fmt.Sprintf("%d record signature(s) verified with the signer's key valid at the record's time, from the chain's own key history", res.sigOK)
		if res.unsignable > 0 {
			c.Detail += fmt.Sprintf("; %d record(s) are the Coordinator's own (recorded refusals), which the protocol has nobody sign: their place is fixed by the chain's links", res.unsignable)
		}
	case serviceAttested(res) != "":
		// No sender signature exists to check: say what holds instead, under a name that does
		// not read as "signatures verified".
		c.Name = CheckChainAuthentication
		c.Status, c.Detail = Verified, serviceAttested(res)
	default:
		c.Status, c.Code = NotEvaluated, CodeUnsigned
		c.Detail = "no signed record was replayed"
	}
	checks = append(checks, c)

	if res.unsigned > 0 && serviceAttested(res) == "" {
		c = Check{Name: CheckChainUnsigned, Chain: ref.ID, Status: NotEvaluated, Code: CodeUnsigned,
			Detail: fmt.Sprintf("unsigned: %d record(s) from senders without a key carry no signature; who wrote them is not evaluated", res.unsigned)}
		for _, s := range res.firstUnsigned {
			c.Evidence = append(c.Evidence, fmt.Sprintf("seq %d", s))
		}
		if res.unsigned > uint64(len(res.firstUnsigned)) {
			c.Evidence = append(c.Evidence, fmt.Sprintf("… and %d more", res.unsigned-uint64(len(res.firstUnsigned))))
		}
		checks = append(checks, c)
	}

	c = Check{Name: CheckChainState, Chain: ref.ID, Where: bundle.ManifestFile}
	if !res.complete() {
		c.Status, c.Code = NotEvaluated, CodeNotReplayed
		c.Detail = fmt.Sprintf("the replay stopped at seq %d, so the final state the manifest claims was not recomputed", res.brkSeq)
	} else {
		size, head, root := res.chain.Size, res.chain.Head, ledger.RootString(res.chain.Root())
		if size != ref.Size || head != ref.Head || root != ref.Root {
			c.Status, c.Code = Broken, CodeStateMismatch
			c.Detail = "the recomputed chain state differs from the manifest's"
			c.Evidence = []string{
				fmt.Sprintf("manifest: size %d head %s root %s", ref.Size, ref.Head, ref.Root),
				fmt.Sprintf("recomputed: size %d head %s root %s", size, head, root),
			}
		} else {
			c.Status = Verified
			c.Detail = fmt.Sprintf("size %d, head and root recomputed equal the manifest's", size)
		}
	}
	return append(checks, c)
}

// participants reports a replayed key history (ledger.KeyHolder: CHAP).
func participants(st ledger.ProfileState) []Participant {
	kh, ok := st.(ledger.KeyHolder)
	if !ok {
		return nil
	}
	var out []Participant
	for _, p := range kh.Participants() {
		pr := Participant{URI: p.URI, Role: p.Role, Keys: []KeyReport{}}
		for _, k := range p.Keys {
			kr := KeyReport{Kid: k.Kid, Revoked: k.Revoked}
			if !k.From.IsZero() {
				kr.From = ledger.Timestamp(k.From)
			}
			if !k.Until.IsZero() {
				kr.Until = ledger.Timestamp(k.Until)
			}
			pr.Keys = append(pr.Keys, kr)
		}
		out = append(out, pr)
	}
	return out
}
