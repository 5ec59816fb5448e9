package replay

import (
	"fmt"
	"strings"

	"github.com/evident-log/evident/ledger/canonical"
)

// The whisper family: asks, answers, and the lapses the Coordinator records.

func (b *Builder) whisperAsk(c *call) string {
	p, taskID := c.p, c.ev.Task
	w := &Whisper{Seq: c.seq, From: c.r.From, Question: str(p, "question"), Options: options(p), Default: firstNonEmpty(str(p, "default_if_no_answer"), value(p, "default_if_lapsed")), Deadline: firstNonEmpty(str(p, "deadline"), msWord(str(p, "deadline_ms"))), Outcome: "open"}
	id := str(p, "whisper_id")
	if id == "" {
		// The reference Coordinator names the whisper in its response; the paper's answer
		// names the ask's envelope id.
		id, _ = b.create("whisper", c.seq)
		if c.r.ID != "" {
			b.whispers[strings.Clone(c.r.ID)] = w
		}
	}
	b.whispers[id] = w
	b.lastWhisp[taskID] = w
	if taskID != "" {
		t := b.known(c.seq, taskID, c.r.Method)
		t.Whispers = append(t.Whispers, w)
	}
	return fmt.Sprintf("%s whispered to %s: %s", c.r.From, strings.Join(firstList(p, "to"), ", "), w.Question)
}

func (b *Builder) whisperAnswer(c *call) string {
	w := b.whisper(c.seq, str(c.p, "whisper_id"), str(c.p, "in_reply_to"), c.ev.Task)
	ans := firstNonEmpty(str(c.p, "answer_option"), str(c.p, "choice"), str(c.p, "answer"), str(c.p, "answer_text"))
	if w != nil {
		w.Answer, w.By = ans, c.r.From
		w.Outcome = "answered"
		if str(c.p, "status") == "defaulted" {
			w.Answer, w.Outcome = w.Default, "default_applied"
		}
	}
	return fmt.Sprintf("%s answered the whisper: %s", c.r.From, ans)
}

// notifyMessage replays notify.message: the reference Coordinator records one of kind
// whisper_lapsed when a whisper's deadline passed unanswered.
func (b *Builder) notifyMessage(c *call) string {
	if str(c.p, "kind") != "whisper_lapsed" {
		return fmt.Sprintf("%s called %s", orDash(c.r.From), c.r.Method)
	}
	w := b.whisper(c.seq, str(c.p, "whisper_id"), "", c.ev.Task)
	def := value(c.p, "default_applied")
	if w != nil {
		w.Outcome, w.Answer = "default_applied", firstNonEmpty(def, w.Default)
		b.find(Info, CodeWhisperDefaulted, c.seq, c.ev.Task, "whisper %q lapsed unanswered: the Coordinator applied its default %q", w.Question, w.Answer)
	}
	return fmt.Sprintf("the whisper %s lapsed: default %s applied", orDash(str(c.p, "whisper_id")), orDash(def))
}

// whisper finds the whisper an answer or a lapse at seq names: by its id (one the chain gave
// it, or the one the log binds to its ask), by the ask's envelope id, or — the paper's form,
// naming neither — the last whisper asked about the task. An id the log does not bind is
// noted, and nil returned.
func (b *Builder) whisper(seq uint64, id, replyTo, taskID string) *Whisper {
	for _, k := range []string{id, replyTo} {
		if w := b.whispers[k]; k != "" && w != nil {
			return w
		}
	}
	if id == "" && replyTo == "" {
		return b.lastWhisp[taskID]
	}
	if id != "" {
		b.unresolved(seq, "whisper", id, taskID)
	}
	return nil
}

// unresolved handles an id of kind named at seq that the chain did not create with it and the
// log does not bind: the first pass records the naming; the replay says why.
func (b *Builder) unresolved(seq uint64, kind, id, taskID string) {
	if b.scan != nil {
		b.scan.named(kind, id, seq)
		return
	}
	st := b.ids.lookup(kind, id)
	switch {
	case st.open:
		b.note(seq, taskID, st.code, kind+"/"+id, "%s %s, first named at seq %d: %s", kind, id, seq, st.why)
	case !b.fromGenesis:
		b.note(seq, taskID, NoteNotFromGenesis, kind+"/"+id, "%s %s, first named at seq %d, is not created in this chain, which does not start at the workspace's first record", kind, id, seq)
	default:
		b.note(seq, taskID, NoteCheck, kind+"/"+id, "%s %s, named at seq %d, was not created in this chain: %s", kind, id, seq, st.why)
	}
}

// options reads a whisper's options: strings, or the reference Coordinator's {id, label} objects.
func options(p *canonical.Object) []string {
	return names(p, "options", func(x *canonical.Object) string { return firstNonEmpty(str(x, "id"), str(x, "label")) })
}

func msWord(ms string) string {
	if ms == "" {
		return ""
	}
	return ms + " ms after the ask"
}
