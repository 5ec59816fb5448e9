// Package chieflab is the ChiefLab Execution Contract v0.1 profile adapter (profile name
// "chieflab/0.1"): the §5 action audit record at every status change, chained per run
// (chain id = runId).
//
// The record Evident hashes is {"chieflab": "0.1", "submitted_by": <operator>, "action": <§5
// record>}: an operator submits the bare §5 record and evidentd, which authenticated the
// operator (a bearer token with an operator identity), writes who submitted it into the
// record; submitted_by is null for an unauthenticated loopback write. A submission already
// in that form is accepted only if it names the authenticated operator (operator_mismatch).
//
// The contract's rules are checked on replay and reported as critical findings rather than
// refused, because a record of a violation is exactly the evidence an auditor needs
// (§3.4: "a publish executor that fires without status approved is a critical conformance
// violation"): executed without a preceding approved (an edit voids an approval),
// executed after rejected, two executions under one idempotency key
// (metadata.idempotencyKey, else the action id), and an action of another workspace in the run.
package chieflab

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Profile is the profile name of ChiefLab run chains.
const Profile = "chieflab/0.1"

// Version is the value of the record's "chieflab" member.
const Version = "0.1"

// Statuses of an action (§5).
var Statuses = []string{"awaiting_approval", "approved", "rejected", "edited", "executed", "failed"}

// Check names of the replay.
const (
	CheckApproval    ledger.CheckName = "chieflab.approval"
	CheckIdempotency ledger.CheckName = "chieflab.idempotency"
	CheckWorkspace   ledger.CheckName = "chieflab.workspace"
	CheckOperator    ledger.CheckName = "chieflab.operator"
)

// Adapter is the ChiefLab profile adapter.
type Adapter struct{}

// Name returns "chieflab/0.1".
func (Adapter) Name() string { return Profile }

// NewState returns an empty run state or restores a persisted one.
func (Adapter) NewState(persisted []byte) (ledger.ProfileState, error) {
	st := &State{Actions: map[string]*Action{}, Executions: map[string]uint64{}}
	if len(persisted) > 0 {
		if err := json.Unmarshal(persisted, st); err != nil {
			return nil, fmt.Errorf("chieflab state: %w", err)
		}
		if st.Actions == nil {
			st.Actions = map[string]*Action{}
		}
		if st.Executions == nil {
			st.Executions = map[string]uint64{}
		}
	}
	return st, nil
}

// Action is the replayed state of one action.
type Action struct {
	Status   string `json:"status"`
	Approved bool   `json:"approved"` // an approval stands (not voided by an edit)
	Rejected bool   `json:"rejected"`
}

// State is a run's profile state.
type State struct {
	Workspace   string             `json:"workspace"`
	Actions     map[string]*Action `json:"actions"`
	Executions  map[string]uint64  `json:"executions"` // idempotency key → seq of its first execution
	Found       []ledger.Finding   `json:"findings,omitempty"`
	NFound      uint64             `json:"n_findings,omitempty"`
	Anonymous   uint64             `json:"anonymous,omitempty"` // records without an authenticated operator
	FirstAnonAt *uint64            `json:"first_anonymous,omitempty"`
}

// Clone returns a deep copy.
func (s *State) Clone() ledger.ProfileState {
	c := &State{Workspace: s.Workspace, Actions: make(map[string]*Action, len(s.Actions)), Executions: maps.Clone(s.Executions),
		Found: slices.Clone(s.Found), NFound: s.NFound, Anonymous: s.Anonymous}
	for k, a := range s.Actions {
		cp := *a
		c.Actions[k] = &cp
	}
	if s.FirstAnonAt != nil {
		v := *s.FirstAnonAt
		c.FirstAnonAt = &v
	}
	return c
}

// MarshalJSON persists the state.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

// Checks names the replay checks.
func (s *State) Checks() []ledger.CheckName {
	return []ledger.CheckName{CheckApproval, CheckIdempotency, CheckWorkspace, CheckOperator}
}

// Findings returns the critical findings in seq order, and a notice for unauthenticated records.
func (s *State) Findings() []ledger.Finding {
	out := slices.Clone(s.Found)
	if s.Anonymous > 0 {
		out = append(out, ledger.Finding{Check: CheckOperator, Severity: ledger.Notice, Code: CodeNoOperator, Seq: *s.FirstAnonAt,
			Detail: fmt.Sprintf("%d record(s) were submitted without an authenticated operator (submitted_by null): who submitted them is not evaluated", s.Anonymous)})
	}
	return out
}

func (s *State) flag(check ledger.CheckName, code ledger.Code, seq uint64, format string, args ...any) {
	s.NFound++
	if len(s.Found) < 4*ledger.MaxFindings {
		s.Found = append(s.Found, ledger.Finding{Check: check, Severity: ledger.Critical, Code: code, Seq: seq, Detail: fmt.Sprintf(format, args...)})
	}
}

// Wrap returns the hashed record for a §5 action submitted by operator ("" = unauthenticated).
func Wrap(action *canonical.Object, operator string) *canonical.Object {
	var by canonical.Value
	if operator != "" {
		by = operator
	}
	return &canonical.Object{Members: []canonical.Member{{Key: "chieflab", Value: Version}, {Key: "submitted_by", Value: by}, {Key: "action", Value: action}}}
}

// wrapped returns the record as hashed ({"chieflab", "submitted_by", "action"}: a bare
// action wrapped with the submitter at, a wrapped one checked against it), its canonical
// bytes and its operator.
func wrapped(at ledger.Position, data []byte) (*canonical.Object, []byte, string, error) {
	v, err := canonical.Parse(data, canonical.Options{})
	if err != nil {
		code := ledger.CodeMalformed
		if errors.Is(err, canonical.ErrTooLarge) || errors.Is(err, canonical.ErrTooDeep) {
			code = ledger.CodeTooLarge
		}
		return nil, nil, "", &ledger.RecordError{Code: code, Detail: err.Error(), Err: err}
	}
	o, ok := v.(*canonical.Object)
	if !ok {
		return nil, nil, "", ledger.Refuse(ledger.CodeMalformed, "a ChiefLab record is a JSON object")
	}
	var rec *canonical.Object
	operator := ""
	if ver, isWrapped := o.String("chieflab"); isWrapped {
		if ver != Version || len(o.Members) != 3 {
			return nil, nil, "", ledger.Refuse(ledger.CodeMalformed, `a wrapped record is exactly {"chieflab": "0.1", "submitted_by", "action"}`)
		}
		by, _ := o.Get("submitted_by")
		switch b := by.(type) {
		case string:
			operator = b
		case nil:
		default:
			return nil, nil, "", ledger.Refuse(ledger.CodeMalformed, "submitted_by is a string or null")
		}
		if at.Submitter != "" && operator != at.Submitter {
			return nil, nil, "", ledger.Refuse(CodeOperatorMismatch, "the record names operator %.80q; the submission was authenticated as %.80q", operator, at.Submitter)
		}
		rec = o
	} else {
		operator = at.Submitter
		rec = Wrap(o, operator)
	}
	c, err := canonical.Encode(rec)
	if err != nil {
		return nil, nil, "", ledger.Refuse(ledger.CodeMalformed, "canonical encoding: %v", err)
	}
	return rec, c, operator, nil
}

// Admit wraps (or checks) the record and replays the approval state machine.
func (s *State) Admit(at ledger.Position, data []byte) (*ledger.Admission, error) {
	rec, c, operator, err := wrapped(at, data)
	if err != nil {
		return nil, err
	}
	act, ok := rec.Object("action")
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "action must be a §5 action object")
	}
	id, _ := act.String("id")
	run, _ := act.String("runId")
	ws, _ := act.String("workspaceId")
	status, _ := act.String("status")
	if id == "" || run == "" || ws == "" {
		return nil, ledger.Refuse(ledger.CodeMalformed, "an action record needs id, runId and workspaceId")
	}
	if run != at.Chain {
		return nil, ledger.Refuse(ledger.CodeWrongChain, "action of run %.80q, not %.80q", run, at.Chain)
	}
	if !slices.Contains(Statuses, status) {
		return nil, ledger.Refuse(ledger.CodeMalformed, "status %.40q is not one of %v", status, Statuses)
	}
	var ts time.Time
	for _, f := range []string{"executedAt", "approvedAt"} {
		if sv, ok := act.String(f); ok && ts.IsZero() {
			t, err := time.Parse(time.RFC3339Nano, sv)
			if err != nil {
				return nil, ledger.Refuse(ledger.CodeBadTimestamp, "%s %.40q is not ISO 8601 / RFC 3339", f, sv)
			}
			if status == "executed" && f == "executedAt" || status == "approved" && f == "approvedAt" {
				ts = t
			}
		}
	}
	s.apply(at.Seq, id, ws, status, act)
	if operator == "" {
		s.Anonymous++
		if s.FirstAnonAt == nil {
			v := at.Seq
			s.FirstAnonAt = &v
		}
	}
	return &ledger.Admission{Canonical: c, Method: status, Sender: operator, TS: ts}, nil
}

func (s *State) apply(seq uint64, id, ws, status string, act *canonical.Object) {
	if s.Workspace == "" {
		s.Workspace = ws
	} else if ws != s.Workspace {
		s.flag(CheckWorkspace, CodeCrossWorkspace, seq, "action %.80q belongs to workspace %.80q, but run's workspace is %.80q (§3.4: cross-workspace access)", id, ws, s.Workspace)
	}
	a := s.Actions[id]
	if a == nil {
		a = &Action{}
		s.Actions[id] = a
	}
	switch status {
	case "approved":
		if a.Rejected {
			// A rejected action never executes; a later approval does not revive it.
			break
		}
		a.Approved = true
	case "rejected":
		a.Rejected, a.Approved = true, false
	case "edited", "awaiting_approval":
		a.Approved = false
	case "executed":
		switch {
		case a.Rejected:
			s.flag(CheckApproval, CodeExecutedAfterReject, seq, "action %.80q executed after it was rejected", id)
		case !a.Approved:
			s.flag(CheckApproval, CodeUnapprovedExecution, seq, "action %.80q executed without a preceding approved (§3.4)", id)
		}
		key := "action:" + id
		if m, ok := act.Object("metadata"); ok {
			if k, ok := m.String("idempotencyKey"); ok && k != "" {
				key = "key:" + k
			}
		}
		if first, dup := s.Executions[key]; dup {
			s.flag(CheckIdempotency, CodeDuplicateExecution, seq, "second execution under %.80q (the first at seq %d)", key, first)
		} else {
			s.Executions[key] = seq
		}
		a.Approved = false
	}
	a.Status = status
}

// AttestedBy implements ledger.ServiceAttested: ChiefLab records are authenticated by
// evidentd, not signed by the operator.
func (s *State) AttestedBy() string {
	return "evidentd authenticated the submitting operator and wrote it into each hashed record (submitted_by); " +
		"the records are as sealed by the service's signed seals, and the operator identity is the service's word"
}
