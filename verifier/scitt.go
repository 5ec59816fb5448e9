package verifier

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
)

// maxSCITTFile bounds a transparent statement of the scitt/ section.
const maxSCITTFile = receipts.MaxStatementSize + 8*receipts.MaxReceiptSize

// scittPolicy is a policy statement that verified, with the policy it carries.
type scittPolicy struct {
	id       string
	logIndex uint64
	policy   *regpolicy.Policy
}

// verifySCITT replays every SCITT registration of the bundle (RFC 9943): each policy
// statement's signature by the service (inside its key's window), its receipt and
// checkpoint and the interval it was in force; each registered statement's receipt and
// checkpoint, and the registration decision — signature by the issuer key the policy
// pinned, algorithm, content type, size, claims — against the policy the registration
// names, which must be the policy in force at the statement's position in the log (or a
// policy the statement passes as well).
func (v *verifier) verifySCITT() []Check {
	if !v.listed(bundle.SCITTIndexFile) {
		return nil
	}
	idxCheck := Check{Name: CheckSCITTIndex, Where: bundle.SCITTIndexFile}
	b, err := v.readSmall(bundle.SCITTIndexFile, 64<<20)
	if err != nil {
		idxCheck.Status, idxCheck.Code, idxCheck.Detail = Broken, CodeSCITTIndex, err.Error()
		return []Check{idxCheck}
	}
	x, err := bundle.ParseSCITTIndex(b)
	if err != nil {
		idxCheck.Status, idxCheck.Code, idxCheck.Detail = Broken, CodeSCITTIndex, err.Error()
		return []Check{idxCheck}
	}
	idxCheck.Status = Verified
	idxCheck.Detail = fmt.Sprintf("%d registration policy statement(s), %d registered statement(s) of %q", len(x.Policies), len(x.Statements), x.Selection)
	checks := []Check{idxCheck}

	var broken []Check
	pols := map[string]*scittPolicy{}
	var order []*scittPolicy // verified policies in log order
	polNotEval := 0
	for i, p := range x.Policies {
		sp, c := v.scittPolicyFile(i, p)
		if c != nil {
			if c.Status == NotEvaluated {
				polNotEval++
			}
			broken = append(broken, *c)
			continue
		}
		pols[p.ID] = sp
		order = append(order, sp)
	}
	if len(x.Policies) > 0 && len(order) == len(x.Policies) {
		checks = append(checks, Check{Name: CheckSCITTPolicies, Status: Verified,
			Detail: fmt.Sprintf("%d registration policy statement(s): signed by the service inside its key's window, receipts and checkpoints verified, in-force intervals match their log positions and iat", len(order))})
	}

	replayed, notEval := 0, 0
	for _, s := range x.Statements {
		c := v.scittStatementFile(s, pols, order)
		if c == nil {
			replayed++
			continue
		}
		if c.Status == NotEvaluated {
			notEval++
		}
		broken = append(broken, *c)
	}
	if len(x.Statements) > 0 && replayed > 0 {
		checks = append(checks, Check{Name: CheckSCITTRegistrations, Status: Verified,
			Detail: fmt.Sprintf("%d of %d registration(s) replayed: receipts and checkpoints verified, each statement passes the registration policy in force at its log position (issuer key pinned by that policy, algorithm, content type, size, claims)", replayed, len(x.Statements))})
	}
	return append(checks, broken...)
}

// scittTransparent reads a transparent statement file and checks that its log entry is id.
func (v *verifier) scittTransparent(name, id string) ([]byte, [][]byte, error) {
	raw, err := v.readSmall(name, maxSCITTFile)
	if err != nil {
		return nil, nil, err
	}
	stmt, rcpts, err := receipts.SplitTransparent(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("not a transparent statement: %v", err)
	}
	if len(rcpts) == 0 {
		return nil, nil, errors.New("carries no receipt (394)")
	}
	entry, err := receipts.EntryHash(stmt)
	if err != nil {
		return nil, nil, err
	}
	if hex.EncodeToString(entry[:]) != id {
		return nil, nil, fmt.Errorf("its log entry is %x, the index says %s", entry, id)
	}
	return stmt, rcpts, nil
}

func (v *verifier) scittPolicyFile(i int, p bundle.SCITTPolicy) (*scittPolicy, *Check) {
	fail := func(st Status, code Code, format string, a ...any) (*scittPolicy, *Check) {
		return nil, &Check{Name: CheckSCITTPolicies, Status: st, Code: code, Where: p.File, Detail: fmt.Sprintf(format, a...)}
	}
	stmt, rcpts, err := v.scittTransparent(p.File, p.ID)
	if err != nil {
		return fail(Broken, CodeSCITTPolicy, "policy %d: %v", i, err)
	}
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		return fail(Broken, CodeSCITTPolicy, "policy %d: %v", i, err)
	}
	if v.issuersErr {
		return fail(NotEvaluated, CodeTrust, "policy %d: no usable issuer keys (see trust.issuers)", i)
	}
	var pol *regpolicy.Policy
	keys := v.keysFor(st.KeyID)
	if len(keys) == 0 {
		return fail(Broken, CodeSCITTPolicy, "policy %d names kid %x, which is not in %s", i, st.KeyID, bundle.IssuersFile)
	}
	for _, k := range keys {
		if pol, err = regpolicy.FromStatement(stmt, k.pub); err == nil {
			break
		}
	}
	if pol == nil {
		return fail(Broken, CodeSCITTPolicy, "policy %d: %v", i, err)
	}
	if err := v.keyWindow(st.KeyID, st.Claims.IssuedAt); err != nil {
		return fail(Broken, CodeKeyWindow, "policy %d: %v", i, err)
	}
	if from := time.Unix(st.Claims.IssuedAt, 0).UTC().Format(time.RFC3339); from != p.InForce.From {
		return fail(Broken, CodeSCITTIndex, "policy %d was signed at %s, the index says it was in force from %s", i, from, p.InForce.From)
	}
	if c := v.scittReceipts(rcpts, stmt, p.LogIndex, CheckSCITTPolicies, p.File); c != nil {
		return nil, c
	}
	return &scittPolicy{id: p.ID, logIndex: p.LogIndex, policy: pol}, nil
}

func (v *verifier) scittStatementFile(s bundle.SCITTStatement, pols map[string]*scittPolicy, order []*scittPolicy) *Check {
	fail := func(st Status, code Code, format string, a ...any) *Check {
		return &Check{Name: CheckSCITTRegistrations, Status: st, Code: code, Where: s.File, Detail: fmt.Sprintf(format, a...)}
	}
	stmt, rcpts, err := v.scittTransparent(s.File, s.ID)
	if err != nil {
		return fail(Broken, CodeSCITTStatement, "%v", err)
	}
	if c := v.scittReceipts(rcpts, stmt, s.LogIndex, CheckSCITTRegistrations, s.File); c != nil {
		return c
	}
	named, ok := pols[s.Policy]
	if !ok {
		return fail(NotEvaluated, CodeSCITTPolicy, "the registration names policy %s, which did not verify (see scitt.policies): the decision is not replayed", s.Policy)
	}
	if named.logIndex >= s.LogIndex {
		return fail(Broken, CodePolicyNotInForce, "registered at log index %d under policy %s, which entered the log only at index %d", s.LogIndex, s.Policy, named.logIndex)
	}
	d, err := named.policy.Check(stmt)
	if err != nil {
		var ref *regpolicy.Refusal
		code := CodeRegistrationRefused
		if errors.As(err, &ref) {
			err = fmt.Errorf("%s: %s", ref.Code, ref.Detail)
		}
		return fail(Broken, code, "policy %s, under which it was registered, refuses it: %v", s.Policy, err)
	}
	if d.Issuer != s.Issuer {
		return fail(Broken, CodeSCITTIndex, "the statement's iss is %.200q, the index says %.200q", d.Issuer, s.Issuer)
	}
	// The policy in force at the statement's position: the last policy logged before it.
	var inForce *scittPolicy
	for _, p := range order {
		if p.logIndex < s.LogIndex {
			inForce = p
		}
	}
	if inForce != nil && inForce != named {
		// A registration checked just before a policy change can reach the log after it;
		// it stands only if the policy in force there admits it too.
		if _, err := inForce.policy.Check(stmt); err != nil {
			return fail(Broken, CodePolicyNotInForce, "registered at log index %d under policy %s, but policy %s (log index %d) was in force there and refuses it: %v", s.LogIndex, named.id, inForce.id, inForce.logIndex, err)
		}
	}
	return nil
}

// scittReceipts verifies the receipts of a registration: each proves the statement's
// leaf at index in a tree whose root the service signed (inside its key's window) and
// whose checkpoint the log signed.
func (v *verifier) scittReceipts(rcpts [][]byte, stmt []byte, index uint64, name CheckName, where string) *Check {
	fail := func(st Status, code Code, format string, a ...any) *Check {
		return &Check{Name: name, Status: st, Code: code, Where: where, Detail: fmt.Sprintf(format, a...)}
	}
	entry, err := receipts.EntryHash(stmt)
	if err != nil {
		return fail(Broken, CodeSCITTStatement, "%v", err)
	}
	leaf := receipts.LeafHash(entry[:])
	for i, raw := range rcpts {
		r0, err := receipts.ParseReceipt(raw)
		if err != nil {
			return fail(Broken, CodeReceipt, "receipt %d: %v", i, err)
		}
		if len(r0.Inclusion) != 1 || len(r0.Consistency) != 0 {
			return fail(Broken, CodeReceipt, "receipt %d: want exactly one inclusion proof", i)
		}
		if v.issuersErr {
			return fail(NotEvaluated, CodeTrust, "no usable issuer keys (see trust.issuers): receipt %d is not evaluated", i)
		}
		keys := v.keysFor(r0.KeyID)
		if len(keys) == 0 {
			return fail(Broken, CodeReceipt, "receipt %d names kid %x, which is not in %s", i, r0.KeyID, bundle.IssuersFile)
		}
		var root []byte
		var rr *receipts.Receipt
		for _, k := range keys {
			if root, rr, err = receipts.VerifyInclusion(raw, leaf[:], k.pub); err == nil {
				break
			}
		}
		if err != nil {
			return fail(Broken, CodeReceipt, "receipt %d does not verify for this statement: %v", i, err)
		}
		if err := v.keyWindow(rr.KeyID, rr.Claims.IssuedAt); err != nil {
			return fail(Broken, CodeKeyWindow, "receipt %d: %v", i, err)
		}
		p := rr.Inclusion[0]
		if p.LeafIndex != index {
			return fail(Broken, CodeSCITTIndex, "receipt %d proves log index %d, the index says %d", i, p.LeafIndex, index)
		}
		cpRaw, src := rr.Checkpoint, fmt.Sprintf("receipt %d of %s", i, where)
		if cpRaw == nil {
			cpRaw, src = v.cpFiles[p.TreeSize], bundle.CheckpointFile(p.TreeSize)
		}
		if cpRaw == nil {
			return fail(NotEvaluated, CodeNoCheckpoint, "receipt %d leads to the root of tree size %d, but the bundle holds no checkpoint of that size", i, p.TreeSize)
		}
		cp, err := v.verifyCheckpoint(cpRaw)
		if errors.Is(err, errNoLogKey) {
			return fail(NotEvaluated, CodeTrust, "no usable log key (see trust.log_key): the checkpoint in %s is not evaluated", src)
		}
		if err != nil {
			return fail(Broken, CodeCheckpoint, "the checkpoint in %s does not verify with the log key: %v", src, err)
		}
		if cp.Size != p.TreeSize || !bytes.Equal(cp.Hash, root) {
			return fail(Broken, CodeCheckpoint, "the checkpoint in %s (size %d) is not the tree receipt %d proves inclusion in (size %d)", src, cp.Size, i, p.TreeSize)
		}
		v.addCheckpoint(cp.Size, cp.Hash, src)
		v.noteCheckpoint(cpRaw, cp.Size, cp.Hash, src)
	}
	return nil
}
