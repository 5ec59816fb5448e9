package htmlreport

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// page is what the template renders: the report with its summary worked out.
type page struct {
	Report   *verifier.Report
	Verified int // checks of each verdict
	NotEval  int
	Broken   int
	// Unpinned are the trust checks whose keys came from the bundle, not from pinned trust.
	Unpinned []verifier.Check
	// BrokenChecks are every broken check: they are never elided.
	BrokenChecks   []verifier.Check
	NotEvalGroups  []group // not evaluated checks, one row per name and code
	VerifiedGroups []group // verified checks, one row per name
	Witnesses      []group // witness.* checks, one row per name, verdict and code
	Trust          []verifier.Check
	Chains         []chainView
	Seals          sealTotals
	Timelines      []timelineView
	MaxEntries     int // the bound in force; negative: none
	// VerdictLine states both axes: the integrity verdict and what the replay found.
	VerdictLine string
	// Story is what the replay of the CHAP chains found, over every chain; Stories per chain.
	Story   verifier.StoryTotals
	Stories []storyView
}

// storyView is one chain's replay findings, counted, with the anchor of its findings table.
type storyView struct {
	verifier.Story
	Anchor string // id of the chain's findings table ("" when it has no timeline on the page)
}

// group is checks of one name (and verdict and code) counted together.
type group struct {
	Name   verifier.CheckName
	Status verifier.Status
	Code   verifier.Code
	Count  int
	Chains []string // distinct chains, in order
	Detail string   // the first check's detail
}

// chainView is one chain's replayed state with the worst verdict of its checks.
type chainView struct {
	verifier.ChainReport
	Status verifier.Status
	Keys   int // participant keys the chain's key history holds
}

// sealTotals adds up the seals of every chain.
type sealTotals struct {
	Total, Verified, Anchored, Entries uint64
	Checkpoints                        int
	CheckpointsVerified                int
}

// timelineView is one CHAP timeline with what the page shows of it: its rows are not held
// but written as the events stream by (writeRows), so a page of a million-entry chain needs
// memory for its tasks and findings only.
type timelineView struct {
	*replay.Timeline
	N           int    // its place on the page, from 1: entry rows are id="c<N>-<seq>"
	Anchor      string // id of its findings table
	MaxEntries  int    // the bound in force; negative: none
	Shown       int    // event rows shown
	Total       int    // event rows in the timeline
	EntriesFile string
	Tasks       []taskView // one table row each
	Detailed    []taskView // the tasks shown with a section: decisions, whispers, escalations, findings
	TasksTotal  int
	Answers     []answerView // the §9.3 answers, each cut to maxAnswerLines
	AnswersPage string       // folder mode: the page with every answer line
	TaskPages   []pageLink   // folder mode: every task, on pages
	EntryPages  []pageLink   // folder mode: every entry, on pages
	Dir         bool         // folder mode
	// broken, finding: the seqs a row past the bound is shown for (with the broken check's detail).
	broken  map[uint64]string
	finding map[uint64]bool
	// ShownTasks are the tasks with a row in the index: links to them resolve.
	ShownTasks map[string]bool
	// Folder mode: the first seq of each entry page, and every task's entries and findings.
	pageSeqs    []uint64
	spans       map[string]*span
	taskFinding map[string][]replay.Finding
}

// span is where a task's entries are in the timeline.
type span struct {
	n           int
	first, last uint64
}

// maxAnswerLines bounds the lines of each §9.3 answer the page shows: several answers have a
// line per task, 100,000 lines for a chain of 100,000 tasks. Every task's row says as much.
const maxAnswerLines = 20

// answerView is a §9.3 answer cut to maxAnswerLines, with how many lines were left out.
type answerView struct {
	N        int
	Question string
	Lines    []string
	More     int
}

// pageLink is one page of a folder report and what it holds.
type pageLink struct {
	File   string
	Lo, Hi uint64 // seqs (entry pages) or task numbers from 1 (task pages)
	Flags  int    // entries flagged (broken, finding, refused) on the page
}

// row is a timeline row: an event, or a gap standing for the events not shown.
type row struct {
	Event  *replay.Event
	Flag   string // broken, finding or refused: why a row past the bound is shown
	Gap    int    // events not shown here (a gap row when > 0)
	GapLo  uint64
	GapHi  uint64
	Broken string // the detail of a broken check at this seq
}

// taskView is a task's lifecycle with its decisions laid out and its place in the timeline.
type taskView struct {
	*replay.Task
	Decisions []decision
	Events    int
	FirstSeq  uint64
	LastSeq   uint64
	Findings  []replay.Finding
	Verdict   string // the worst finding's severity, "" when none
	Detail    bool   // it has a section (decisions, whispers, abstentions, escalations or findings)
	EntryLink string // folder mode: its first entry on the entry pages
}

func build(in Input) (*page, error) {
	rep := in.Report
	p := &page{Report: rep, MaxEntries: in.MaxEntries}
	if p.MaxEntries == 0 {
		p.MaxEntries = DefaultMaxEntries
	}
	notEval, verified, witnesses := map[string]int{}, map[string]int{}, map[string]int{}
	byChain := map[string][]verifier.Check{}
	p.Verified, p.Broken = rep.Count(verifier.Verified), rep.Count(verifier.Broken)
	p.NotEval = len(rep.Checks) - p.Verified - p.Broken
	for _, c := range rep.Checks {
		switch c.Status {
		case verifier.Verified:
			addTo(&p.VerifiedGroups, verified, string(c.Name), c)
		case verifier.Broken:
			p.BrokenChecks = append(p.BrokenChecks, c)
		default:
			k := string(c.Name) + "\x00" + string(c.Code)
			addTo(&p.NotEvalGroups, notEval, k, c)
		}
		if strings.HasPrefix(string(c.Name), "trust.") {
			p.Trust = append(p.Trust, c)
			if c.Code == verifier.CodeTrustNotPinned && c.Status != verifier.Broken {
				p.Unpinned = append(p.Unpinned, c)
			}
		}
		if strings.HasPrefix(string(c.Name), "witness.") {
			k := string(c.Name) + "\x00" + string(c.Status) + "\x00" + string(c.Code)
			addTo(&p.Witnesses, witnesses, k, c)
		}
		if c.Chain != "" {
			byChain[c.Chain] = append(byChain[c.Chain], c)
		}
	}
	for _, c := range rep.Chains {
		v := chainView{ChainReport: c, Status: verifier.Fold(byChain[c.ID])}
		for _, pt := range c.Participants {
			v.Keys += len(pt.Keys)
		}
		p.Chains = append(p.Chains, v)
		p.Seals.Total += c.Coverage.SealsTotal
		p.Seals.Verified += c.Coverage.SealsVerified
		p.Seals.Anchored += c.Coverage.EntriesAnchored
		p.Seals.Entries += c.Coverage.EntriesTotal
	}
	for _, cp := range rep.Log.Checkpoints {
		p.Seals.Checkpoints++
		if cp.Status == verifier.Verified {
			p.Seals.CheckpointsVerified++
		}
	}
	for i := range in.Timelines {
		v, err := cutTimeline(in, i, p.MaxEntries)
		if err != nil {
			return nil, err
		}
		v.Anchor = fmt.Sprintf("findings-%d", i+1)
		p.Timelines = append(p.Timelines, v)
	}
	p.story(in)
	return p, nil
}

// story works out the replay's findings for the banner and the summary: the report's own
// Story when the caller set it (evident verify does, with the chains that did not replay),
// else counted from the timelines shown.
func (p *page) story(in Input) {
	stories := in.Report.Story
	if len(stories) == 0 {
		for _, tl := range in.Timelines {
			stories = append(stories, verifier.StoryOf(tl, nil))
		}
	}
	both := *in.Report
	both.Story = stories
	p.VerdictLine, p.Story = both.VerdictLine(), both.StoryTotals()
	for _, s := range stories {
		v := storyView{Story: s}
		for _, tl := range p.Timelines {
			if tl.Chain == s.Chain && tl.Task == s.Task {
				v.Anchor = tl.Anchor
				break
			}
		}
		p.Stories = append(p.Stories, v)
	}
}

// addTo counts c in the group keyed k, creating it at the end of list; index maps a key to
// its group's position + 1.
func addTo(list *[]group, index map[string]int, k string, c verifier.Check) {
	i := index[k]
	if i == 0 {
		*list = append(*list, group{Name: c.Name, Status: c.Status, Code: c.Code, Detail: c.Detail})
		i = len(*list)
		index[k] = i
	}
	g := &(*list)[i-1]
	g.Count++
	if c.Chain != "" && (len(g.Chains) == 0 || g.Chains[len(g.Chains)-1] != c.Chain) && len(g.Chains) < 8 {
		g.Chains = append(g.Chains, c.Chain)
	}
}

// cutTimeline works out what the page shows of timeline i: the first max events (all when
// max < 0) and, past them, every refused event, every event a broken check names and every
// event with a finding (writeRows writes them, each run of events left out as one gap row);
// every task with a finding and up to max others (pickTasks). It reads the events once, to
// count them and each task's.
func cutTimeline(in Input, i, max int) (timelineView, error) {
	tl, rep := in.Timelines[i], in.Report
	v := timelineView{Timeline: tl, N: i + 1, MaxEntries: max, EntriesFile: bundle.EntriesFile(bundle.ChainDir(tl.Chain)),
		broken: map[uint64]string{}, finding: map[uint64]bool{}, ShownTasks: map[string]bool{}}
	for _, c := range rep.Checks {
		if c.Status != verifier.Broken || c.Chain != tl.Chain {
			continue
		}
		if s, ok := strings.CutPrefix(c.Where, "seq "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
				if _, seen := v.broken[n]; !seen {
					v.broken[n] = string(c.Name) + ": " + c.Detail
				}
			}
		}
	}
	taskFinding := map[string][]replay.Finding{}
	for _, f := range tl.Findings {
		v.finding[f.Seq] = true
		if f.Task != "" {
			taskFinding[f.Task] = append(taskFinding[f.Task], f)
		}
	}
	// Which tasks the page shows does not depend on the events: the spans of the others are
	// not kept, unless the folder's task pages list every task (a span for each of a hundred
	// thousand tasks is several MiB).
	keep := pickTasks(tl.Tasks, taskFinding, max)
	perTask := map[string]*span{}
	if !in.dir {
		for j, t := range tl.Tasks {
			if keep[j] {
				perTask[t.ID] = &span{}
			}
		}
	}
	err := in.events(i, func(ev *replay.Event) error {
		flag := v.flag(ev)
		if in.dir {
			if v.Total%entriesPerPage == 0 {
				v.pageSeqs = append(v.pageSeqs, ev.Seq)
				v.EntryPages = append(v.EntryPages, pageLink{File: entryPageFile(i+1, len(v.EntryPages)), Lo: ev.Seq})
			}
			pl := &v.EntryPages[len(v.EntryPages)-1]
			pl.Hi = ev.Seq
			if flag != "" {
				pl.Flags++
			}
		}
		if ev.Task != "" {
			s := perTask[ev.Task]
			if s == nil && in.dir {
				s = &span{}
				perTask[ev.Task] = s
			}
			if s != nil {
				if s.n == 0 {
					s.first = ev.Seq
				}
				s.n++
				s.last = ev.Seq
			}
		}
		if max < 0 || v.Total < max || flag != "" {
			v.Shown++
		}
		v.Total++
		return nil
	})
	if err != nil {
		return v, err
	}
	v.TasksTotal = len(tl.Tasks)
	for _, a := range tl.Answers {
		av := answerView{N: a.N, Question: a.Question, Lines: a.Answer}
		if len(a.Answer) > maxAnswerLines {
			av.Lines, av.More = a.Answer[:maxAnswerLines], len(a.Answer)-maxAnswerLines
		}
		v.Answers = append(v.Answers, av)
	}
	if in.dir {
		v.Dir, v.spans, v.taskFinding = true, perTask, taskFinding
		v.AnswersPage = fmt.Sprintf("c%d-answers.html", i+1)
		for lo := 0; lo < len(tl.Tasks); lo += tasksPerPage {
			v.TaskPages = append(v.TaskPages, pageLink{File: taskPageFile(i+1, len(v.TaskPages)), Lo: uint64(lo + 1), Hi: uint64(min(lo+tasksPerPage, len(tl.Tasks)))})
		}
	}
	for j, t := range tl.Tasks {
		if !keep[j] {
			continue
		}
		s := perTask[t.ID]
		if s != nil && s.n == 0 {
			s = nil // a task shown that no event names
		}
		tv := v.task(t, taskFinding[t.ID], s)
		v.Tasks = append(v.Tasks, tv)
		v.ShownTasks[t.ID] = true
		if tv.Detail {
			v.Detailed = append(v.Detailed, tv)
		}
	}
	return v, nil
}

// task lays out t with its findings and entries for a table row and its section.
func (v *timelineView) task(t *replay.Task, fs []replay.Finding, s *span) taskView {
	tv := taskView{Task: t, Findings: fs, Verdict: worst(fs)}
	if s != nil {
		tv.Events, tv.FirstSeq, tv.LastSeq = s.n, s.first, s.last
		if v.Dir {
			tv.EntryLink = v.seqHref(s.first)
		}
	}
	tv.Detail = len(t.Decisions)+len(t.Whispers)+len(t.Abstentions)+len(t.Escalations)+len(fs) > 0
	for _, d := range t.Decisions {
		tv.Decisions = append(tv.Decisions, newDecision(d))
	}
	return tv
}

// flag says why an event is shown past the bound: broken, finding or refused; "" when it is not.
func (v *timelineView) flag(ev *replay.Event) string {
	switch {
	case v.broken[ev.Seq] != "":
		return "broken"
	case v.finding[ev.Seq]:
		return "finding"
	case ev.Refusal:
		return "refused"
	}
	return ""
}

// worst is the most severe of fs: impossible, warning or info; "" when there is none.
func worst(fs []replay.Finding) string {
	w := ""
	for _, f := range fs {
		switch {
		case f.Severity == replay.Impossible:
			return string(replay.Impossible)
		case f.Severity == replay.Warning:
			w = string(replay.Warning)
		case w == "":
			w = string(f.Severity)
		}
	}
	return w
}

// pickTasks chooses the task sections a page shows: every task with a finding, then up to max
// others (all when max < 0), tasks with an override first, then in the chain's order.
func pickTasks(tasks []*replay.Task, findings map[string][]replay.Finding, max int) []bool {
	keep := make([]bool, len(tasks))
	budget := max
	for _, overridesOnly := range []bool{true, false} {
		for i, t := range tasks {
			switch {
			case keep[i]:
			case len(findings[t.ID]) > 0:
				keep[i] = true
			case max < 0 || budget > 0 && (!overridesOnly || overridden(t)):
				keep[i] = true
				budget--
			}
		}
	}
	return keep
}

func overridden(t *replay.Task) bool {
	for _, d := range t.Decisions {
		if d.Kind == "override" {
			return true
		}
	}
	return false
}
