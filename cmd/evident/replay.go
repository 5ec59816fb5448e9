package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// replayOutput is what `evident replay --format json` writes.
type replayOutput struct {
	Format  string          `json:"format"`
	Bundle  string          `json:"bundle"`
	Verdict verifier.Status `json:"verdict"` // the verification verdict of the bundle (§9.3 question 8)
	// Summary states both axes in one line: the integrity verdict and what the replay found
	// (verifier.Report.VerdictLine).
	Summary string `json:"summary"`
	// Story counts each chain's findings by severity and code (verifier.Story).
	Story     []verifier.Story   `json:"story"`
	Timelines []*replay.Timeline `json:"timelines"`
	// totals are the story's counts over every chain (the text form's headline).
	totals verifier.StoryTotals
}

// newReplayCmd is `evident replay BUNDLE`.
func newReplayCmd(a *app) *cobra.Command {
	var (
		format          formatFlag
		task, trustFile string
		quiet           bool
		limits          recordLimits
	)
	cmd := &cobra.Command{
		Use:   "replay [--task T] [--format text|json] [flags] BUNDLE",
		Short: "Rebuild a CHAP chain's timeline (or one task's), answer CHAP §9.3, flag impossible histories",
		Long: `Rebuilds the timeline of every CHAP chain in a bundle (or one task): who assigned,
accepted, drafted, reviewed, approved or overrode what (diff applied to the base artefact),
under which key and mode; answers the CHAP paper's §9.3 questions; reports impossible
histories, each with the records it rests on. Ids the Coordinator assigned in its responses
are bound to their creations only where the log determines it; the rest is listed under
NOT EVALUATED, never as a finding. The bundle is verified first (offline) for question 8.

Exit codes: 0 verified and no impossible history, 1 broken or an impossible history,
2 not evaluated, 3 could not run, 64 usage.`,
		Example: `  evident replay case.evident.zip
  evident replay --task tsk_42 --format json --trust operator.trust.json case.evident.zip`,
		Args:              exactArgs("BUNDLE"),
		ValidArgsFunction: fileArgs,
	}
	f := cmd.Flags()
	addFormat(cmd, &format)
	f.StringVar(&task, "task", "", "replay only this task_id")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress, even on a terminal")
	f.StringVar(&trustFile, "trust", "", "pin the operator's trust file for the verification (as evident verify --trust); without it the verdict is at best not evaluated")
	limits.register(f)
	markFiles(cmd, "trust")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return runReplay(a.ctx, cmd, args[0], &format, task, trustFile, quiet, limits, a.stdout, a.stderr)
	})
	return cmd
}

// runReplay verifies the bundle at path, replays its CHAP chains and writes the timelines.
func runReplay(ctx context.Context, cmd *cobra.Command, path string, format *formatFlag, task, trustFile string, quiet bool, limits recordLimits, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	lim, code, ok := limits.get(cmd)
	if !ok {
		return code
	}
	var trust *trustfile.File
	if trustFile != "" {
		var err error
		if trust, err = readTrustFile(trustFile); err != nil {
			fmt.Fprintln(stderr, "evident replay: --trust:", err)
			return exitUsage
		}
	}
	rep, r, code := verifyBundle(ctx, "evident replay", path, quiet, stderr, func(o *verifier.Options) { o.Trust, o.Limits = trust, lim })
	if rep == nil {
		return code
	}
	if r == nil {
		// Refused at open: which bytes are the evidence is not settled, so nothing is replayed.
		fmt.Fprintf(stderr, "evident replay: %s is refused (see the report), nothing is replayed\n", clean(path))
		if format.json() {
			rep.WriteJSON(stdout)
		} else {
			rep.WriteText(stdout)
		}
		return code
	}
	defer r.Close()
	var progress func(string, uint64, uint64)
	if !quiet && isTerminal(stderr) {
		progress = progressPrinter(stderr)
	}
	out := replayOutput{Format: "evident-replay/v1", Bundle: path, Verdict: rep.Verdict, Timelines: []*replay.Timeline{}}
	tls, err := replayStories(ctx, rep, r, storyOptions{task: task, lim: lim, progress: progress})
	if progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident replay:", err)
		return exitFailure
	}
	for _, s := range rep.Story {
		if s.Error != "" {
			fmt.Fprintf(stderr, "evident replay: %s: %s\n", clean(s.Chain), clean(s.Error))
			return exitFailure
		}
	}
	out.Timelines = append(out.Timelines, tls...)
	out.Story, out.Summary, out.totals = rep.Story, rep.VerdictLine(), rep.StoryTotals()
	if out.Story == nil {
		out.Story = []verifier.Story{}
	}
	if task != "" && !hasTask(out.Timelines) {
		return unknownTask(ctx, cmd, r, task)
	}
	if format.json() {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(out)
	} else {
		err = writeReplayText(stdout, &out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident replay:", err)
		return exitFailure
	}
	code = rep.ExitCode()
	for _, tl := range out.Timelines {
		if tl.Impossible() > 0 {
			code = exitBroken
		}
	}
	return code
}

// hasTask reports whether a task-filtered replay found its task in any chain.
func hasTask(tls []*replay.Timeline) bool {
	for _, tl := range tls {
		if len(tl.Tasks) > 0 {
			return true
		}
	}
	return false
}

// unknownTask reports a --task that no CHAP chain of the bundle holds, naming a few tasks
// that are there, and returns exitUsage.
func unknownTask(ctx context.Context, cmd *cobra.Command, r *bundle.Reader, task string) int {
	const show = 5
	var chains, ids []string
	total := 0
	for _, ref := range r.Manifest.Chains {
		if ref.Profile != chap.Profile {
			continue
		}
		chains = append(chains, clean(ref.ID))
		tl, err := replayChain(ctx, r, ref, "", true, canonical.Limits{}, nil)
		if err != nil {
			continue
		}
		total += len(tl.Tasks)
		for _, t := range tl.Tasks {
			if len(ids) < show {
				ids = append(ids, clean(t.ID))
			}
		}
	}
	switch {
	case len(chains) == 0:
		return usageErr(cmd, "-task %q: the bundle holds no CHAP chain", clean(task))
	case total == 0:
		return usageErr(cmd, "-task %q is not in the chain %s, which holds no task", clean(task), strings.Join(chains, ", "))
	}
	more := ""
	if total > len(ids) {
		more = fmt.Sprintf(", … (%d in all)", total)
	}
	return usageErr(cmd, "-task %q is not in the chain %s; its tasks include %s%s", clean(task), strings.Join(chains, ", "), strings.Join(ids, ", "), more)
}

func summary(rep *verifier.Report) string {
	n := map[verifier.Status]int{}
	for _, c := range rep.Checks {
		n[c.Status]++
	}
	return fmt.Sprintf("%d checks verified, %d not evaluated, %d broken", n[verifier.Verified], n[verifier.NotEvaluated], n[verifier.Broken])
}

// replayChain streams a chain's entries.jsonl into a timeline, in the replay's two passes (the
// first finds which ids the log binds to which creations). It trusts the verifier for
// integrity and only reads the records, so a malformed line is an error, not a finding.
//
// findingsOnly keeps no events (replay.Builder.FindingsOnly): what a story and a task list need,
// in memory that grows with the tasks, not the entries.
func replayChain(ctx context.Context, r *bundle.Reader, ref bundle.ChainRef, task string, findingsOnly bool, lim canonical.Limits, progress func(string, uint64, uint64)) (*replay.Timeline, error) {
	ix := replay.NewIndex()
	if err := verifier.EachCHAPRecord(ctx, r, ref, lim, func(n uint64) {
		if progress != nil {
			progress("replay "+ref.ID+" (ids)", n, ref.Size)
		}
	}, ix.Add); err != nil {
		return nil, err
	}
	b := replay.New(ref.ID, task, ix.Bind())
	if findingsOnly {
		b.FindingsOnly()
	}
	if err := verifier.EachCHAPRecord(ctx, r, ref, lim, func(n uint64) {
		if progress != nil {
			progress("replay "+ref.ID, n, ref.Size)
		}
	}, b.Add); err != nil {
		return nil, err
	}
	return b.Timeline(), nil
}

func writeReplayText(w io.Writer, out *replayOutput) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("bundle %s — verification verdict: %s\n", clean(out.Bundle), clean(out.Summary))
	if h := out.totals.Headline(); h != "" {
		p("  %s\n", clean(h))
	}
	for _, s := range out.Story {
		for _, n := range s.NotEvaluated {
			p("  chain %s: not evaluated at seq %d (%s): %s\n", clean(s.Chain), n.Seq, clean(n.Code), clean(n.Detail))
		}
	}
	for _, tl := range out.Timelines {
		p("\n=== chain %s", clean(tl.Chain))
		if tl.Task != "" {
			p(" — task %s", clean(tl.Task))
		}
		p(" (%d entries read)\n\nTIMELINE\n", tl.Entries)
		for _, e := range tl.Events {
			key := ""
			if e.Kid != "" {
				key = " [key " + clean(e.Kid) + "]"
			}
			mode := ""
			if e.Mode != "" {
				mode = " {" + clean(e.Mode) + "}"
			}
			p("  %5d %-24s %-22s %s%s%s\n", e.Seq, clean(e.TS), clean(e.Method), clean(e.Summary), key, mode)
		}
		for _, t := range tl.Tasks {
			p("\nTASK %s (%s): %s\n", clean(t.ID), clean(t.Kind), clean(t.Status))
			p("  created by %s; assigned by %s to %s; accepted by %s; completed by %s\n", dash(t.CreatedBy), dash(strings.Join(t.AssignedBy, ", ")),
				dash(strings.Join(t.Assignees, ", ")), dash(strings.Join(t.AcceptedBy, ", ")), dash(t.CompletedBy))
			for _, d := range t.Decisions {
				p("  decide.%s by %s at seq %d (key %s, mode %s)\n", clean(d.Kind), clean(d.By), d.Seq, dash(d.Kid), dash(d.Mode))
				if d.Diff != "" {
					p("    diff:      %s\n", clean(d.Diff))
				}
				if d.Base != "" {
					p("    base:      %s\n", clean(d.Base))
				}
				if d.Result != "" {
					p("    result:    %s\n", clean(d.Result))
				}
				if d.Digest != "" {
					p("    digest:    %s\n", clean(d.Digest))
				}
				if d.Rationale != "" {
					p("    rationale: %s\n", clean(d.Rationale))
				}
				if len(d.Tags) > 0 {
					p("    tags:      %s\n", clean(strings.Join(d.Tags, ", ")))
				}
				if len(d.PolicyRefs) > 0 {
					p("    policy:    %s\n", clean(strings.Join(d.PolicyRefs, ", ")))
				}
			}
			for _, w := range t.Whispers {
				p("  whisper at seq %d from %s: %q → %s (%s)\n", w.Seq, clean(w.From), clean(w.Question), dash(w.Answer), clean(w.Outcome))
			}
		}
		for _, d := range tl.Deliberations {
			p("\nDELIBERATION %s under %s: %d vote(s), rule gives %s, recorded %s\n", clean(d.ID), dash(d.Rule), len(d.Votes), clean(d.Outcome), dash(d.Recorded))
		}
		p("\nFINDINGS (%d impossible)\n", tl.Impossible())
		if len(tl.Findings) == 0 {
			p("  none\n")
		}
		for _, f := range tl.Findings {
			p("  %-10s seq %-5d %-28s %s\n", f.Severity, f.Seq, f.Code, clean(f.Detail))
			if f.Basis != "" {
				p("             rests on: %s\n", clean(f.Basis))
			}
		}
		p("\nNOT EVALUATED (%d: what the log alone does not determine; not findings)\n", len(tl.NotEvaluated))
		if len(tl.NotEvaluated) == 0 {
			p("  none\n")
		}
		for _, n := range tl.NotEvaluated {
			p("  seq %-5d %-24s %s\n", n.Seq, n.Code, clean(n.Detail))
		}
		p("\nCHAP §9.3\n")
		for _, a := range tl.Answers {
			p("  %d. %s\n", a.N, a.Question)
			for _, s := range a.Answer {
				p("     - %s\n", clean(s))
			}
		}
	}
	return bw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return clean(s)
}

// clean keeps bundle text from driving the terminal: control characters are escaped.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
