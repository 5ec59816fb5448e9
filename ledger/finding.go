package ledger

// CheckName is the stable dotted name of a verifier check, e.g. "chain.entries". It is defined
// here so that profiles can name the checks they run (Verdict.Check, CrossChain.ReferenceCheck,
// Finding.Check) without importing the verifier.
type CheckName string

// Severity ranks a Finding.
type Severity string

// Severities of findings.
const (
	Critical Severity = "critical" // a protocol rule the evidence shows was broken (the chain is "broken")
	Notice   Severity = "notice"   // something the evidence cannot settle (the check is "not_evaluated")
)

// Finding is what a profile's replay concludes about a chain beyond admitting its records:
// a rule of the protocol the recorded evidence shows was broken although every record was
// well formed (ChiefLab: executed without approval), or a reference the chain alone cannot
// settle (COP: a parent event in another topic). Evidence of a violation is itself evidence:
// such records are accepted and kept, and the verifier reports the finding.
type Finding struct {
	Check    CheckName `json:"check"`    // the verifier check it belongs to, e.g. "chieflab.approval"
	Severity Severity  `json:"severity"` // critical or notice
	Code     Code      `json:"code"`     // stable code (docs/errors.md)
	Seq      uint64    `json:"seq"`      // the entry that shows it
	Detail   string    `json:"detail"`   // for a person
}

// Auditor is implemented by a ProfileState that draws findings from the records it admitted.
// Findings returns them in seq order; Checks names every check the profile runs, so a chain
// without findings can be reported verified for each.
type Auditor interface {
	Findings() []Finding
	Checks() []CheckName
}

// MaxFindings bounds the findings a profile state keeps per check (the count goes on).
const MaxFindings = 16

// ServiceAttested is implemented by a ProfileState whose records carry no sender signature by
// design because evidentd authenticates the submitter and records it inside the hashed record
// (ChiefLab). AttestedBy says, for the verifier's report, what vouches for the records instead.
type ServiceAttested interface {
	AttestedBy() string
}

// CodeDoc documents one code a profile defines beyond the shared ones of this package: a
// refusal at ingest, a finding of the replay, or a verdict of one of its bundle checks.
type CodeDoc struct {
	Code    Code
	Kind    string // as docs/errors.md shows it: "refusal", "critical finding", "notice", "verification", …
	HTTP    int    // the status evidentd answers the code with (422 is usual for a refusal); 0 when it is no HTTP problem
	Meaning string // one line for a person
}

// CheckDoc documents one verifier check a profile runs.
type CheckDoc struct {
	Name    CheckName
	Meaning string // one line for a person
}

// Documented is implemented by a Profile with codes or checks of its own. The registry
// (ledger/profile) gathers them, so that the API, the verifier and the docs' tables take a
// profile's codes and checks from the profile alone.
type Documented interface {
	CodeDocs() []CodeDoc
	CheckDocs() []CheckDoc
}
