// Package replay rebuilds the story a CHAP 0.3 evidence chain tells: the forensic timeline of
// `evident replay`. It reads records already admitted to a chain — it checks no link and no
// signature; that is the verifier's job — and reconstructs, per task, who created, assigned,
// accepted and completed it, review requests, decide.approve / decide.reject / decide.override
// with the RFC 6902 diff applied to the base artefact, rationales, tags and policy references,
// abstentions and escalations, whispers and the defaults that applied, handoffs, deliberation
// votes and the rule's outcome, and mode changes. It answers the eight questions of the CHAP
// paper's §9.3 for the chain (or one task).
//
// Every method the reference Coordinator records (its wire form: routing fields in params)
// replays with that Coordinator's semantics. The Coordinator returns the ids it assigns in its
// responses, which its audit log does not record; replay binds such an id to the record that
// created it only where the log determines it (Bind: the ids are ULIDs that lead with their
// creation time, drawn while the creating call is handled), and otherwise says so in
// Timeline.NotEvaluated rather than guessing.
//
// A replay reads the chain twice: an Index of the first pass (NewIndex, Index.Add) finds what
// was created and what is named, Index.Bind solves the bindings, and a Builder (New, Add,
// Timeline) replays with them. Replay does both over records held in memory.
//
// Histories that cannot have happened under the CHAP rules are reported as Findings with a
// stable code (docs/profiles/chap.md, "Replay"), each impossible one with the records it rests
// on (Finding.Basis): a task completed that was never assigned, an approval whose artefact
// digest differs from what was sent for review, a privileged call by a member without the
// admin role (or a member-only call by a non-member), a diff that does not apply to its base
// artefact, a decision whose stated result differs from its diff applied to the base.
// Timestamps going backwards for one sender are a warning, not an impossibility (clocks drift;
// the chain order stands).
//
// The methods are replayed by one handler each, found in a table (methods.go); the handlers
// of a family live in a file of their own (tasks.go, review.go, whisper.go, handoff.go,
// deliberation.go, control.go, workspace.go).
package replay
