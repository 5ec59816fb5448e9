package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// auditPage is one page of GET /v1/chains/{chain}/entries.
type auditPage struct {
	Chain   string `json:"chain"`
	Entries []struct {
		Seq    uint64              `json:"seq"`
		Method string              `json:"method"`
		Sender string              `json:"sender"`
		Attrs  map[string][]string `json:"attrs"`
	} `json:"entries"`
	Next *uint64 `json:"next"`
}

// readAll walks every page of a filtered read (limit per page) and returns the seqs in order.
func readAll(t *testing.T, base, chain string, q url.Values, limit int) []uint64 {
	t.Helper()
	var seqs []uint64
	from := uint64(0)
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
		qq := url.Values{}
		for k, v := range q {
			qq[k] = v
		}
		qq.Set("from", fmt.Sprint(from))
		qq.Set("limit", fmt.Sprint(limit))
		code, body := get(t, base+"/v1/chains/"+chain+"/entries?"+qq.Encode())
		if code != http.StatusOK {
			t.Fatalf("read %v: %d %s", qq, code, body)
		}
		var p auditPage
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if len(seqs) > 0 && e.Seq <= seqs[len(seqs)-1] {
				t.Fatalf("entries out of chain order: %d after %d", e.Seq, seqs[len(seqs)-1])
			}
			seqs = append(seqs, e.Seq)
		}
		if p.Next == nil {
			return seqs
		}
		if len(p.Entries) != limit {
			t.Fatalf("next on a page of %d entries (limit %d)", len(p.Entries), limit)
		}
		from = *p.Next
	}
}

// TestAuditReadJourneys streams every D.* journey (plus a recorded refusal) into evidentd
// and reads it back filtered the ways the paper's journeys filter — task, logical
// artefact, tag, outcome, method, sender and combinations — page by page, comparing with
// the same selection computed from the records themselves.
func TestAuditReadJourneys(t *testing.T) {
	_, srv := start(t, t.TempDir())
	for _, j := range chapscenario.Journeys() {
		t.Run(j.ID, func(t *testing.T) {
			b, err := chapscenario.BuildJourney(j)
			if err != nil {
				t.Fatal(err)
			}
			recs := b.Records()
			refusal := fmt.Appendf(nil, `{"outcome":{"code":"forbidden","message":"not assigned"},"request":{"jsonrpc":"2.0","id":"refused-1","method":"task.complete","from":"agent:mallory","params":{"task_id":%q,"tags":["late"]}}}`, j.Task)
			recs = append(recs, refusal)
			body, _ := json.Marshal(func() []json.RawMessage {
				out := make([]json.RawMessage, len(recs))
				for i, r := range recs {
					out[i] = r
				}
				return out
			}())
			if code, resp := post(t, srv.URL+"/v1/chains/"+j.Workspace+"/entries", "application/json", body); code != http.StatusCreated {
				t.Fatalf("ingest: %d %s", code, resp)
			}
			// The model: each record's own attributes, method and sender.
			type model struct {
				seq            uint64
				method, sender string
				attrs          map[string][]string
			}
			var all []model
			for i, r := range recs {
				rec, err := chap.Parse(r)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, model{uint64(i), rec.Method, rec.From, rec.Attrs()})
			}
			sel := func(f func(m model) bool) []uint64 {
				var out []uint64
				for _, m := range all {
					if f(m) {
						out = append(out, m.seq)
					}
				}
				return out
			}
			has := func(m model, name, v string) bool { return slices.Contains(m.attrs[name], v) }
			var logical, tag, sender string
			for _, m := range all {
				if logical == "" && len(m.attrs[ledger.AttrLogicalID]) > 0 {
					logical = m.attrs[ledger.AttrLogicalID][0]
				}
				if tag == "" && len(m.attrs[ledger.AttrTag]) > 0 && m.method != "task.complete" {
					tag = m.attrs[ledger.AttrTag][0]
				}
				if m.method == "task.assign" {
					sender = m.sender
				}
			}
			cases := []struct {
				name string
				q    url.Values
				want []uint64
			}{
				{"task", url.Values{"task_id": {j.Task}}, sel(func(m model) bool { return has(m, ledger.AttrTask, j.Task) })},
				{"task alias", url.Values{"task": {j.Task}}, sel(func(m model) bool { return has(m, ledger.AttrTask, j.Task) })},
				{"refused", url.Values{"outcome": {"refused"}}, []uint64{uint64(len(recs) - 1)}},
				{"accepted task decisions", url.Values{"task_id": {j.Task}, "outcome": {"accepted"}, "method": {"decide.override"}},
					sel(func(m model) bool {
						return has(m, ledger.AttrTask, j.Task) && has(m, ledger.AttrOutcome, "accepted") && m.method == "decide.override"
					})},
				{"task by its assigner", url.Values{"task_id": {j.Task}, "sender": {sender}},
					sel(func(m model) bool { return has(m, ledger.AttrTask, j.Task) && m.sender == sender })},
				{"unknown task", url.Values{"task_id": {"tsk_none"}}, nil},
			}
			if logical != "" {
				cases = append(cases, struct {
					name string
					q    url.Values
					want []uint64
				}{"logical id", url.Values{"logical_id": {logical}}, sel(func(m model) bool { return has(m, ledger.AttrLogicalID, logical) })})
			}
			if tag != "" {
				cases = append(cases, struct {
					name string
					q    url.Values
					want []uint64
				}{"tag and task", url.Values{"tag": {tag}, "task_id": {j.Task}}, sel(func(m model) bool { return has(m, ledger.AttrTag, tag) && has(m, ledger.AttrTask, j.Task) })})
			}
			for _, c := range cases {
				for _, limit := range []int{1000, 2} {
					got := readAll(t, srv.URL, j.Workspace, c.q, limit)
					if !slices.Equal(got, c.want) {
						t.Errorf("%s (limit %d): seqs %v, want %v", c.name, limit, got, c.want)
					}
				}
			}
			if len(sel(func(m model) bool { return has(m, ledger.AttrTask, j.Task) })) < 3 {
				t.Errorf("the journey's task %s has fewer than 3 records: the filter test is too weak", j.Task)
			}
		})
	}
	t.Run("bad queries", func(t *testing.T) {
		for _, q := range []string{"outcome=maybe", "task_id=", "since=yesterday", "tag=" + url.QueryEscape("a") + strings17()} {
			if code, body := get(t, srv.URL+"/v1/chains/wsp_my_reviews/entries?"+q); code != http.StatusBadRequest || !bytes.Contains(body, []byte("bad_query")) {
				t.Errorf("%s: %d %s", q, code, body)
			}
		}
	})
}

// strings17 makes 17 tag filters: one over the limit.
func strings17() string {
	var b bytes.Buffer
	for i := range 17 {
		fmt.Fprintf(&b, "&tag=t%d", i)
	}
	return b.String()
}
