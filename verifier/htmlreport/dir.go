package htmlreport

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// A folder report puts every entry and every task of a timeline on pages of these many each:
// a page a browser opens at once, and few enough pages for a million entries (200).
const (
	entriesPerPage = 5000
	tasksPerPage   = 1000
)

func entryPageFile(n, k int) string { return fmt.Sprintf("c%d-entries-%04d.html", n, k+1) }
func taskPageFile(n, k int) string  { return fmt.Sprintf("c%d-tasks-%04d.html", n, k+1) }

// seqHref links to the entry at seq on the entry pages.
func (v *timelineView) seqHref(seq uint64) string {
	k := sort.Search(len(v.pageSeqs), func(k int) bool { return v.pageSeqs[k] > seq }) - 1
	if k < 0 {
		k = 0
	}
	return entryPageFile(v.N, k) + "#c" + strconv.Itoa(v.N) + "-" + strconv.FormatUint(seq, 10)
}

// pageHead is what the head of a page of a folder report shows.
type pageHead struct {
	Title, Subtitle string
	Prev, Next      string
}

// WriteDir writes the report as a folder dir (created if need be): dir/index.html is the page
// Write writes, its timelines cut as there, each cut linked to the pages that hold every
// entry (cN-entries-NNNN.html) and every task with its section (cN-tasks-NNNN.html) of the
// N-th timeline. Every page is self-contained like the index; they link to each other and to
// nothing else.
func WriteDir(dir string, in Input) error {
	if in.Report == nil {
		return fmt.Errorf("htmlreport: no report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	in.dir = true
	p, err := build(in)
	if err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	if err := writeFile(filepath.Join(dir, "index.html"), func(w *bufio.Writer) error { return p.write(w, &in) }); err != nil {
		return err
	}
	for i := range p.Timelines {
		tv := &p.Timelines[i]
		if err := tv.writeEntryPages(dir, &in); err != nil {
			return err
		}
		if err := tv.writeTaskPages(dir); err != nil {
			return err
		}
		if err := tv.writeAnswersPage(dir); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates name and writes it through a buffer.
func writeFile(name string, write func(*bufio.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("htmlreport: %s: %w", filepath.Base(name), err)
	}
	return nil
}

// head is the head of the k-th of pages.
func head(pages []pageLink, k int, title, subtitle string) pageHead {
	h := pageHead{Title: title, Subtitle: subtitle}
	if k > 0 {
		h.Prev = pages[k-1].File
	}
	if k+1 < len(pages) {
		h.Next = pages[k+1].File
	}
	return h
}

// writeEntryPages writes every entry of the timeline, entriesPerPage to a page.
func (v *timelineView) writeEntryPages(dir string, in *Input) error {
	var f *os.File
	var bw *bufio.Writer
	cur := 0 // the page being written
	closePage := func() error {
		if f == nil {
			return nil
		}
		bw.WriteString("</tbody></table>\n")
		err := tmpl.ExecuteTemplate(bw, "pageEnd", head(v.EntryPages, cur, "", ""))
		if err == nil {
			err = bw.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		f = nil
		return err
	}
	idx := 0
	err := in.events(v.N-1, func(ev *replay.Event) error {
		if idx%entriesPerPage == 0 {
			if err := closePage(); err != nil {
				return err
			}
			k := idx / entriesPerPage
			cur = k
			var err error
			pl := v.EntryPages[k]
			if f, err = os.Create(filepath.Join(dir, pl.File)); err != nil {
				return err
			}
			bw = bufio.NewWriterSize(f, 64<<10)
			h := head(v.EntryPages, k, fmt.Sprintf("Entries %d–%d of %s", pl.Lo, pl.Hi, v.Chain),
				fmt.Sprintf("page %d of %d of the timeline's %s entries; rows marked: broken (a check), finding (the replay), refused (by the Coordinator)", k+1, len(v.EntryPages), num(v.Total)))
			if err := tmpl.ExecuteTemplate(bw, "page", h); err != nil {
				return err
			}
			if err := tmpl.ExecuteTemplate(bw, "rowsHead", nil); err != nil {
				return err
			}
		}
		idx++
		v.writeRow(bw, ev, v.flag(ev))
		return nil
	})
	if err == nil {
		err = closePage()
	} else if f != nil {
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("htmlreport: entry pages: %w", err)
	}
	return nil
}

// writeTaskPages writes every task of the timeline with its section, tasksPerPage to a page.
func (v *timelineView) writeTaskPages(dir string) error {
	for k, pl := range v.TaskPages {
		var tasks []taskView
		for _, t := range v.Timeline.Tasks[pl.Lo-1 : pl.Hi] {
			tasks = append(tasks, v.task(t, v.taskFinding[t.ID], v.spans[t.ID]))
		}
		h := head(v.TaskPages, k, fmt.Sprintf("Tasks %d–%d of %s", pl.Lo, pl.Hi, v.Chain),
			fmt.Sprintf("page %d of %d of the timeline's %s tasks, each with its entries and, when it has decisions, whispers, escalations or findings, its section", k+1, len(v.TaskPages), num(v.TasksTotal)))
		err := writeFile(filepath.Join(dir, pl.File), func(w *bufio.Writer) error {
			if err := tmpl.ExecuteTemplate(w, "page", h); err != nil {
				return err
			}
			if err := tmpl.ExecuteTemplate(w, "tasks", tasks); err != nil {
				return err
			}
			for _, tv := range tasks {
				if tv.Detail {
					if err := tmpl.ExecuteTemplate(w, "section", tv); err != nil {
						return err
					}
				}
			}
			return tmpl.ExecuteTemplate(w, "pageEnd", h)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeAnswersPage writes every line of the timeline's §9.3 answers.
func (v *timelineView) writeAnswersPage(dir string) error {
	all := answersAll{Answers: make([]answerView, len(v.Timeline.Answers))}
	for i, a := range v.Timeline.Answers {
		all.Answers[i] = answerView{N: a.N, Question: a.Question, Lines: a.Answer}
	}
	h := pageHead{Title: "CHAP §9.3 questions: every answer for " + v.Chain, Subtitle: "one line per task where the question is about each task"}
	return writeFile(filepath.Join(dir, v.AnswersPage), func(w *bufio.Writer) error {
		if err := tmpl.ExecuteTemplate(w, "page", h); err != nil {
			return err
		}
		if err := tmpl.ExecuteTemplate(w, "answers", all); err != nil {
			return err
		}
		return tmpl.ExecuteTemplate(w, "pageEnd", h)
	})
}

// answersAll is every answer, uncut, for the answers template.
type answersAll struct {
	Answers     []answerView
	AnswersPage string
}
