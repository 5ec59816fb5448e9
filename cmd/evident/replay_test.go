package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/chaptest"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// writeBundle writes records as an unsealed one-chain bundle (zip), links computed by the ledger.
func writeBundle(t *testing.T, ws string, recs [][]byte) string {
	t.Helper()
	return chaptest.UnsealedBundle(t, t.TempDir(), ws, "replay_test", recs)
}

func TestReplayJourney(t *testing.T) {
	j := chapscenario.Journeys()[10] // D.11, motor claims
	b, err := chapscenario.BuildJourney(j)
	if err != nil {
		t.Fatal(err)
	}
	path := writeBundle(t, j.Workspace, b.Records())
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "--format", "json", "--task", j.Task, path}, &out, &errb)
	// Unsealed and with an unusable log key: nothing is broken, but it is not all evaluated.
	if code != exitNotEvaluated {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got replayOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Timelines) != 1 || got.Timelines[0].Impossible() != 0 {
		t.Fatalf("timelines %+v", got.Timelines)
	}
	tl := got.Timelines[0]
	if len(tl.Tasks) != 1 || len(tl.Tasks[0].Decisions) != 1 {
		t.Fatalf("tasks %+v", tl.Tasks)
	}
	d := tl.Tasks[0].Decisions[0]
	if d.Result != `{"settlement":{"amount":4800,"currency":"GBP","goodwill":{"amount":200,"reason":"bereavement_acknowledgement"}}}` {
		t.Fatalf("override result %s", d.Result)
	}
	if !strings.HasPrefix(tl.Answers[7].Answer[0], "evident verify: ") {
		t.Fatalf("§9.3 q8 %v", tl.Answers[7])
	}

	out.Reset()
	if code = run(context.Background(), []string{"replay", path}, &out, &errb); code != exitNotEvaluated {
		t.Fatalf("text replay exit %d, want %d as above: %s", code, exitNotEvaluated, errb.String())
	}
	for _, want := range []string{"TIMELINE", "decide.override by human:harper.s@insurer.com", "result:", "CHAP §9.3", "FINDINGS (0 impossible)"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("text output lacks %q:\n%s", want, out.String())
		}
	}
	if errb.Len() != 0 && strings.Contains(errb.String(), "\r") {
		t.Fatal("progress written to a non-terminal")
	}
}

func TestReplayImpossibleHistory(t *testing.T) {
	co := chapscenario.NewParticipant("service:co", "service", chap.RoleAdmin, "x")
	bot := chapscenario.NewParticipant("agent:bot", "agent", "drafter", "x")
	b := chapscenario.NewBuilder("wsp_bad", chapscenario.JourneyStart)
	for _, err := range []error{b.Join(co, co.URI), b.Join(bot, co.URI)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"task.create", "task.complete"} {
		if _, err := b.Envelope(bot, co.URI, m, map[string]any{"task_id": "t1"}); err != nil {
			t.Fatal(err)
		}
	}
	path := writeBundle(t, "wsp_bad", b.Records())
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", path}, &out, &errb); code != exitBroken {
		t.Fatalf("exit %d, want %d (impossible history)\n%s", code, exitBroken, out.String())
	}
	if !strings.Contains(out.String(), replay.CodeCompletedUnassigned) {
		t.Fatalf("no %s finding:\n%s", replay.CodeCompletedUnassigned, out.String())
	}
}

func TestVerifyHTML(t *testing.T) {
	j := chapscenario.Journeys()[0]
	b, err := chapscenario.BuildJourney(j)
	if err != nil {
		t.Fatal(err)
	}
	path := writeBundle(t, j.Workspace, b.Records())
	out := filepath.Join(t.TempDir(), "report.html")
	var so, se bytes.Buffer
	if code := run(context.Background(), []string{"verify", "--format", "html", "-o", out, path}, &so, &se); code != exitNotEvaluated {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `Timeline of <span class="name">wsp_my_reviews</span>`, "framework-pattern-misread", `{&#34;comments&#34;:[{&#34;line&#34;:47,&#34;severity&#34;:&#34;info&#34;`} {
		if !strings.Contains(string(page), want) {
			t.Fatalf("html report lacks %q", want)
		}
	}
}
