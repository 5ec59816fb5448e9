package main

import (
	"context"
	"fmt"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// storyOptions say how replayStories replays.
type storyOptions struct {
	task string           // cut every timeline to this task ("" for all)
	lim  canonical.Limits // the record limits the bundle was verified with
	// storyOnly replays for the story alone (evident verify's text and JSON): no events are
	// kept (replay.Builder.FindingsOnly), and chains of more than maxEntries entries (0: no
	// bound) are not replayed — their story is not evaluated and says where it is (evident
	// replay, or the HTML report), since each replay costs two more passes over the chain.
	storyOnly  bool
	maxEntries uint64
	progress   func(string, uint64, uint64)
}

// replayStories replays every CHAP chain of the bundle r and sets rep.Story to what each
// replay found, so that every form of the report (text, JSON, HTML) states the story's
// findings beside the integrity verdict. It returns the timelines of the chains that
// replayed. A chain that does not replay (one the verifier found broken may not) has a Story
// saying why and no timeline; only a cancelled context is an error.
func replayStories(ctx context.Context, rep *verifier.Report, r *bundle.Reader, o storyOptions) ([]*replay.Timeline, error) {
	var tls []*replay.Timeline
	rep.Story = nil
	for _, ref := range r.Manifest.Chains {
		if ref.Profile != chap.Profile {
			continue
		}
		if ref.Slice != nil {
			// A case slice holds the entries of one case and the key records, not the chain:
			// a history needs every entry.
			rep.Story = append(rep.Story, verifier.Story{Chain: ref.ID, Task: o.task, Codes: []verifier.StoryCode{},
				NotReplayed: fmt.Sprintf("a case slice (%s holds some of the chain's %d entries): a story is told from the whole chain, so evident replay of a bundle of the whole chain tells it", bundle.SliceFile(ref.Dir), ref.Size)})
			continue
		}
		if o.storyOnly && o.maxEntries > 0 && ref.Size > o.maxEntries {
			rep.Story = append(rep.Story, verifier.Story{Chain: ref.ID, Task: o.task, Codes: []verifier.StoryCode{},
				NotReplayed: fmt.Sprintf("%d entries, over the %d evident verify replays for its text and JSON reports (-story-max-entries); evident replay BUNDLE or evident verify --format html replays it whole", ref.Size, o.maxEntries)})
			continue
		}
		tl, err := replayChain(ctx, r, ref, o.task, o.storyOnly, o.lim, o.progress)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			rep.Story = append(rep.Story, verifier.Story{Chain: ref.ID, Task: o.task, Codes: []verifier.StoryCode{},
				Error: fmt.Sprintf("the chain does not replay: %v", err)})
			continue
		}
		tl.Answers[7].Answer = []string{fmt.Sprintf("evident verify: %s (%s)", rep.Verdict, summary(rep))}
		rep.Story = append(rep.Story, verifier.StoryOf(tl, notEvaluated(tl)))
		tls = append(tls, tl)
	}
	return tls, nil
}

// notEvaluated returns what the replay of tl did not evaluate, with why: every report lists
// and counts them as not evaluated, never as findings.
func notEvaluated(tl *replay.Timeline) []verifier.StoryNote {
	out := make([]verifier.StoryNote, len(tl.NotEvaluated))
	for i, n := range tl.NotEvaluated {
		out[i] = verifier.StoryNote{Seq: n.Seq, Task: n.Task, Code: n.Code, Detail: n.Detail}
	}
	return out
}
