// Package chaptest makes CHAP evidence for tests: the signed records of a workspace of many
// tasks (TaskChain) and an unsealed one-chain bundle of any records (UnsealedBundle), so that
// the verifier's, the report's and the CLI's tests build their long chains one way.
package chaptest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/receipts"
)

// TaskOptions shape a TaskChain.
type TaskOptions struct {
	// Note is the text of every task.update ("" : a plain one).
	Note string
	// Anomalies makes every 25th task (i%25 == 7) completed by a participant it was never
	// assigned to under a task id never created (an impossible history), and updated under a
	// task id never created (a warning), in place of one of its updates.
	Anomalies bool
}

// TaskChain returns the signed records of a CHAP workspace ws of tasks tasks after four joins,
// ten entries each (create, accept, seven updates, complete); the task half way through gets
// a draft and a human override of it in place of two of its updates.
func TaskChain(tb testing.TB, ws string, tasks int, o TaskOptions) [][]byte {
	tb.Helper()
	if o.Note == "" {
		o.Note = "checked order history and carrier report"
	}
	c := chapscenario.NewCast()
	b := chapscenario.NewBuilder(ws, chapscenario.JourneyStart)
	b.Step = time.Second
	for _, p := range []*chapscenario.Participant{c.Coordinator, c.Alice, c.Bob, c.Bot} {
		if err := b.Join(p, c.Coordinator.URI); err != nil {
			tb.Fatal(err)
		}
	}
	send := func(p *chapscenario.Participant, method string, params map[string]any) {
		if _, err := b.Envelope(p, c.Coordinator.URI, method, params); err != nil {
			tb.Fatal(err)
		}
	}
	draft := map[string]any{"reply": map[string]any{"refund": "partial", "amount": 40, "currency": "EUR"}}
	for i := range tasks {
		id := fmt.Sprintf("tsk_%05d", i)
		anomalous := o.Anomalies && i%25 == 7
		send(c.Alice, "task.create", map[string]any{"task_id": id, "kind": "support_reply", "assignee": c.Bot.URI})
		send(c.Bot, "task.accept", map[string]any{"task_id": id})
		updates := 7
		switch {
		case i == tasks/2:
			updates = 5
			send(c.Bot, "artefact.submit", map[string]any{"task_id": id, "artefact": map[string]any{"id": "art_" + id, "logical_id": "lgl_" + id, "kind": "reply", "content": draft}})
			send(c.Bob, "decide.override", map[string]any{"task_id": id, "logical_id": "lgl_" + id, "rationale": "damaged in transit: full refund",
				"diff": []any{map[string]any{"op": "replace", "path": "/reply/refund", "value": "full"}, map[string]any{"op": "replace", "path": "/reply/amount", "value": 120}}})
		case anomalous:
			updates = 6
			send(c.Bot, "task.update", map[string]any{"task_id": "tsk_ghost_" + id, "status": "in_progress"})
		}
		for u := range updates {
			send(c.Bot, "task.update", map[string]any{"task_id": id, "status": "in_progress", "progress": u * 10, "note": o.Note})
		}
		if anomalous {
			send(c.Bob, "task.complete", map[string]any{"task_id": "tsk_never_" + id, "outcome": "sent"})
		} else {
			send(c.Bot, "task.complete", map[string]any{"task_id": id, "outcome": "sent"})
		}
	}
	return b.Records()
}

// UnsealedBundle writes records as an unsealed one-chain bundle (zip) at dir/b.zip, links
// computed by the ledger, with a log key and an issuer key that nothing pins, and returns its
// path. producer names the test in the manifest.
func UnsealedBundle(tb testing.TB, dir, ws, producer string, recs [][]byte) string {
	tb.Helper()
	c, err := ledger.NewChain(ws, chap.Adapter{})
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	bw := bundle.NewWriter(&buf)
	cdir := bundle.ChainDir(ws)
	ew, err := bw.Create(bundle.EntriesFile(cdir))
	if err != nil {
		tb.Fatal(err)
	}
	enc := json.NewEncoder(ew)
	for _, r := range recs {
		a, err := c.Append(r, chapscenario.JourneyStart)
		if err != nil {
			tb.Fatal(err)
		}
		if err := enc.Encode(bundle.EntryLine{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: ledger.Timestamp(chapscenario.JourneyStart), Record: a.Admission.Canonical}); err != nil {
			tb.Fatal(err)
		}
	}
	_, vkey, err := note.GenerateKey(rand.Reader, "evident.test/log")
	if err != nil {
		tb.Fatal(err)
	}
	if err := bw.WriteFile(bundle.LogKeyFile, []byte(vkey+"\n")); err != nil {
		tb.Fatal(err)
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	ck, err := receipts.COSEKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	ks, err := cbor.Marshal([]cbor.RawMessage{ck})
	if err != nil {
		tb.Fatal(err)
	}
	if err := bw.WriteFile(bundle.IssuersFile, ks); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Close(bundle.Manifest{Producer: producer, Scope: bundle.Scope{Chain: ws}, Log: bundle.LogInfo{Origin: "evident.test/log"},
		Chains: []bundle.ChainRef{{ID: ws, Dir: cdir, Profile: chap.Profile, Size: c.Size, Head: c.Head, Root: ledger.RootString(c.Root())}}}); err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, "b.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}
