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

// timelineView is one CHAP timeline cut to the rows the page shows.
type timelineView struct {
	*replay.Timeline
	Anchor      string // id of its findings table
	Rows        []row
	Shown       int // event rows shown
	Total       int // event rows in the timeline
	EntriesFile string
	Tasks       []taskView // one table row each
	Detailed    []taskView // the tasks shown with a section: decisions, whispers, escalations, findings
	TasksTotal  int
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
}

func build(in Input) *page {
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
	for i, tl := range in.Timelines {
		v := cutTimeline(tl, rep, p.MaxEntries)
		v.Anchor = fmt.Sprintf("findings-%d", i+1)
		p.Timelines = append(p.Timelines, v)
	}
	p.story(in)
	return p
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

// cutTimeline keeps the first max events of tl (all when max < 0) and, past them, every
// refused event, every event a broken check names and every event with a finding; each run
// of events left out becomes one gap row. Task sections are bounded by max too (pickTasks).
func cutTimeline(tl *replay.Timeline, rep *verifier.Report, max int) timelineView {
	v := timelineView{Timeline: tl, Total: len(tl.Events), EntriesFile: bundle.EntriesFile(bundle.ChainDir(tl.Chain))}
	broken := map[uint64]string{}
	for _, c := range rep.Checks {
		if c.Status != verifier.Broken || c.Chain != tl.Chain {
			continue
		}
		if s, ok := strings.CutPrefix(c.Where, "seq "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
				if _, seen := broken[n]; !seen {
					broken[n] = string(c.Name) + ": " + c.Detail
				}
			}
		}
	}
	finding := map[uint64]bool{}
	taskFinding := map[string][]replay.Finding{}
	for _, f := range tl.Findings {
		finding[f.Seq] = true
		if f.Task != "" {
			taskFinding[f.Task] = append(taskFinding[f.Task], f)
		}
	}
	type span struct {
		n           int
		first, last uint64
	}
	perTask := map[string]*span{}
	gap := row{}
	for i := range tl.Events {
		ev := &tl.Events[i]
		if ev.Task != "" {
			s := perTask[ev.Task]
			if s == nil {
				s = &span{first: ev.Seq}
				perTask[ev.Task] = s
			}
			s.n++
			s.last = ev.Seq
		}
		r := row{Event: ev, Broken: broken[ev.Seq]}
		switch {
		case r.Broken != "":
			r.Flag = "broken"
		case finding[ev.Seq]:
			r.Flag = "finding"
		case ev.Refusal:
			r.Flag = "refused"
		}
		if max >= 0 && i >= max && r.Flag == "" {
			if gap.Gap == 0 {
				gap.GapLo = ev.Seq
			}
			gap.Gap++
			gap.GapHi = ev.Seq
			continue
		}
		if gap.Gap > 0 {
			v.Rows = append(v.Rows, gap)
			gap = row{}
		}
		v.Rows = append(v.Rows, r)
		v.Shown++
	}
	if gap.Gap > 0 {
		v.Rows = append(v.Rows, gap)
	}
	v.TasksTotal = len(tl.Tasks)
	keep := pickTasks(tl.Tasks, taskFinding, max)
	for i, t := range tl.Tasks {
		if !keep[i] {
			continue
		}
		fs := taskFinding[t.ID]
		tv := taskView{Task: t, Findings: fs}
		if s := perTask[t.ID]; s != nil {
			tv.Events, tv.FirstSeq, tv.LastSeq = s.n, s.first, s.last
		}
		for _, d := range t.Decisions {
			tv.Decisions = append(tv.Decisions, newDecision(d))
		}
		v.Tasks = append(v.Tasks, tv)
		if len(t.Decisions)+len(t.Whispers)+len(t.Abstentions)+len(t.Escalations)+len(fs) > 0 {
			v.Detailed = append(v.Detailed, tv)
		}
	}
	return v
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
