package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/verifier"
)

// errDropped is what the dropping transport returns instead of an answer.
var errDropped = errors.New("answer dropped on the way back")

// droppingTransport delivers every request and loses a share of the answers: the server
// has done the work, the client never learns it. It models a Coordinator whose connection
// broke after evidentd committed.
type droppingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	rnd  *rand.Rand
	p    float64 // share of answers lost
	lost int
}

func (d *droppingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	drop := d.rnd.Float64() < d.p
	if drop {
		d.lost++
	}
	d.mu.Unlock()
	if drop {
		io.Copy(io.Discard, resp.Body) // the server finished writing its answer
		resp.Body.Close()
		return nil, errDropped
	}
	return resp, nil
}

// ingestAnswer is an answer to POST …/entries as a client reads it.
type ingestAnswer struct {
	status int
	res    api.IngestResponse
	prob   api.Problem
}

func submit(t *testing.T, hc *http.Client, url, contentType string, body []byte) (ingestAnswer, error) {
	t.Helper()
	resp, err := hc.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		return ingestAnswer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return ingestAnswer{}, err
	}
	a := ingestAnswer{status: resp.StatusCode}
	if resp.StatusCode/100 == 2 {
		err = json.Unmarshal(raw, &a.res)
	} else {
		err = json.Unmarshal(raw, &a.prob)
	}
	if err != nil {
		return a, fmt.Errorf("answer %d %s: %w", resp.StatusCode, raw, err)
	}
	return a, nil
}

// retryForm is one way a Coordinator sends its records.
type retryForm struct {
	name    string
	chain   string
	records [][]byte
	body    func(batch [][]byte, next int) (contentType string, body []byte)
}

func jsonLines(batch [][]byte, _ int) (string, []byte) {
	if len(batch) == 1 {
		return api.MediaJSON, batch[0] // one record, bare
	}
	return api.MediaJSONLines, bytes.Join(batch, []byte("\n"))
}

func jsonArray(batch [][]byte, _ int) (string, []byte) {
	return api.MediaJSON, append(append([]byte("["), bytes.Join(batch, []byte(","))...), ']')
}

func auditReadPage(batch [][]byte, next int) (string, []byte) {
	_, arr := jsonArray(batch, next)
	return api.MediaJSON, fmt.Appendf(nil, `{"entries": %s, "next_seq": %d}`, arr, next)
}

// wrapAudit wraps envelopes as a Coordinator's audit.read entries {seq, arrived, envelope,
// prev_hash}, its evidence chain covering them all.
func wrapAudit(t *testing.T, envs [][]byte, start time.Time) [][]byte {
	out := make([][]byte, len(envs))
	head := ledger.Genesis
	for i, env := range envs {
		b, err := json.Marshal(map[string]any{"seq": i, "arrived": ledger.Timestamp(start.Add(time.Duration(i) * time.Second)),
			"envelope": json.RawMessage(env), "prev_hash": head.String()})
		if err != nil {
			t.Fatal(err)
		}
		r, err := chap.Parse(env)
		if err != nil {
			t.Fatal(err)
		}
		head = ledger.NextLink(r.Canonical, head)
		out[i] = b
	}
	return out
}

func retryForms(t *testing.T) []retryForm {
	start := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	paper, err := chapscenario.Long("wsp_retry_paper", 150, start, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := chapscenario.LongForm("wsp_retry_ref", 60, start, chapscenario.Reference, nil)
	if err != nil {
		t.Fatal(err)
	}
	audit, err := chapscenario.LongForm("wsp_retry_audit", 60, start, chapscenario.Reference, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []retryForm{
		{"paper envelopes as JSON Lines", "wsp_retry_paper", paper.Records(), jsonLines},
		{"reference envelopes as JSON arrays", "wsp_retry_ref", ref.Records(), jsonArray},
		{"audit entries as audit.read pages", "wsp_retry_audit", wrapAudit(t, audit.Records(), start), auditReadPage},
	}
}

// TestRetriesThroughLostAnswers: a client whose answers are lost at random resends each
// batch until it gets one. Every record ends up in the chain exactly once, in order, each
// answer gives every record of its batch its place, and the sealed chain verifies offline.
func TestRetriesThroughLostAnswers(t *testing.T) {
	_, srv := start(t, t.TempDir())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for fi, f := range retryForms(t) {
		t.Run(f.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, uint64(fi)))
			dt := &droppingTransport{next: http.DefaultTransport, rnd: rand.New(rand.NewPCG(seed, uint64(fi)+100)), p: 0.4}
			hc := &http.Client{Transport: dt, Timeout: 30 * time.Second}
			url := srv.URL + "/v1/chains/" + f.chain + "/entries"
			sends, answers := 0, map[int]int{}
			for next := 0; next < len(f.records); {
				n := min(1+rnd.IntN(8), len(f.records)-next)
				var a ingestAnswer
				for attempt := 0; ; attempt++ {
					if attempt == 50 {
						t.Fatalf("batch at %d: no answer in 50 attempts", next)
					}
					ct, body := f.body(f.records[next:next+n], next+n)
					sends++
					var err error
					if a, err = submit(t, hc, url, ct, body); errors.Is(err, errDropped) {
						// Lost: send the same again, or (as a client that batches what is
						// pending) the same with more records after it.
						if rnd.IntN(2) == 0 {
							n = min(n+1+rnd.IntN(4), len(f.records)-next)
						}
						continue
					} else if err != nil {
						t.Fatal(err)
					}
					break
				}
				answers[a.status]++
				if a.status != http.StatusCreated && a.status != http.StatusOK {
					t.Fatalf("batch at %d: %d %s: %s", next, a.status, a.prob.Code, a.prob.Detail)
				}
				if len(a.res.Accepted) != n {
					t.Fatalf("batch at %d: %d acknowledgements for %d records", next, len(a.res.Accepted), n)
				}
				fresh := 0
				for i, acc := range a.res.Accepted {
					if acc.Seq != uint64(next+i) {
						t.Fatalf("record %d acknowledged at seq %d", next+i, acc.Seq)
					}
					if !acc.Duplicate {
						fresh++
					}
				}
				if (a.status == http.StatusOK) != (fresh == 0) {
					t.Fatalf("batch at %d: status %d with %d new records", next, a.status, fresh)
				}
				next += n
			}
			t.Logf("%d records in %d sends, %d answers lost; answers %v", len(f.records), sends, dt.lost, answers)
			checkChainHolds(t, srv.URL, f.chain, f.records)
		})
	}
}

// checkChainHolds checks that chain holds exactly records, in order, and that it verifies
// offline once sealed.
func checkChainHolds(t *testing.T, base, chain string, records [][]byte) {
	t.Helper()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Entries(t.Context(), chain, client.EntriesQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != len(records) || page.Next != nil {
		t.Fatalf("chain holds %d entries, %d records were sent", len(page.Entries), len(records))
	}
	for i, e := range page.Entries {
		r, err := chap.Parse(records[i])
		if err != nil {
			t.Fatal(err)
		}
		var stored bytes.Buffer
		if err := json.Compact(&stored, e.Record); err != nil {
			t.Fatal(err)
		}
		if e.Seq != uint64(i) || !bytes.Equal(stored.Bytes(), r.Canonical) {
			t.Fatalf("entry %d (seq %d) is not record %d sent", i, e.Seq, i)
		}
	}
	rep := verifyZip(t, fetchTrust(t, base), sealAndExport(t, c, chain))
	if rep.Verdict != verifier.Verified {
		t.Fatalf("verdict %s\n%s", rep.Verdict, failing(rep))
	}
}

// TestRetryAnswers: what a resent submission is answered, over HTTP.
func TestRetryAnswers(t *testing.T) {
	d, srv := start(t, t.TempDir())
	start := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	b, err := chapscenario.Long("wsp_retry", 12, start, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	url := srv.URL + "/v1/chains/wsp_retry/entries"
	hc := &http.Client{Timeout: 30 * time.Second}
	send := func(batch ...[]byte) ingestAnswer {
		t.Helper()
		ct, body := jsonLines(batch, 0)
		a, err := submit(t, hc, url, ct, body)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	size := func() uint64 {
		t.Helper()
		_, body := get(t, srv.URL+"/v1/chains/wsp_retry")
		var h api.ChainHead
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		return h.Size
	}
	first := send(recs[:6]...)
	if first.status != http.StatusCreated {
		t.Fatalf("first batch: %d %s", first.status, first.prob.Detail)
	}
	cases := []struct {
		name   string
		batch  [][]byte
		status int
		dups   int    // duplicates, a prefix of the answer
		code   string // the problem code of a refusal
		size   uint64 // chain size after
	}{
		{"the last envelope again", recs[5:6], http.StatusOK, 1, "", 6},
		{"the same envelope once more", recs[5:6], http.StatusOK, 1, "", 6},
		{"the whole batch again", recs[:6], http.StatusOK, 6, "", 6},
		{"a repeated prefix and a new tail", recs[3:9], http.StatusCreated, 3, "", 9},
		{"a new record at a taken position", [][]byte{forkOf(t, b, recs, 7)}, http.StatusConflict, 0, string(api.CodeFork), 9},
		{"the rest", recs[9:], http.StatusCreated, 0, "", 12},
	}
	for _, c := range cases {
		a := send(c.batch...)
		if a.status != c.status || string(a.prob.Code) != c.code {
			t.Fatalf("%s: %d %s, want %d %s (%s)", c.name, a.status, a.prob.Code, c.status, c.code, a.prob.Detail)
		}
		if got := size(); got != c.size {
			t.Fatalf("%s: chain size %d, want %d", c.name, got, c.size)
		}
		if c.code != "" {
			continue
		}
		if a.res.Size != c.size {
			t.Fatalf("%s: answer says size %d, want %d", c.name, a.res.Size, c.size)
		}
		for i, acc := range a.res.Accepted {
			if acc.Duplicate != (i < c.dups) {
				t.Fatalf("%s: answer %d duplicate=%v", c.name, i, acc.Duplicate)
			}
			if i < c.dups && int(acc.Seq) < len(first.res.Accepted) {
				want := first.res.Accepted[acc.Seq]
				if acc != (api.AcceptedEntry{Seq: want.Seq, Prev: want.Prev, Link: want.Link, Arrival: want.Arrival, Duplicate: true}) {
					t.Fatalf("%s: %+v, first acknowledged as %+v", c.name, acc, want)
				}
			}
		}
	}
	// The fork is kept as evidence; the retries left none.
	forks, err := d.store.Forks(t.Context(), "wsp_retry")
	if err != nil || len(forks) != 1 || forks[0].Seq != 7 {
		t.Fatalf("fork evidence %+v, %v", forks, err)
	}
	checkChainHolds(t, srv.URL, "wsp_retry", recs)
}

// forkOf is a different signed envelope that names the same predecessor as recs[i].
func forkOf(t *testing.T, b *chapscenario.Builder, recs [][]byte, i int) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(recs[i], &env); err != nil {
		t.Fatal(err)
	}
	delete(env, "sig")
	env["id"] = "fork-of-" + fmt.Sprint(i)
	raw, _ := json.Marshal(env)
	sender := chapscenario.NewCast().Bot
	for _, p := range []*chapscenario.Participant{chapscenario.NewCast().Alice, chapscenario.NewCast().Bob, sender} {
		if p.URI == env["from"] {
			sender = p
		}
	}
	tag, err := chap.Sign(raw, sender.Kid, sender.Key)
	if err != nil {
		t.Fatal(err)
	}
	env["sig"] = tag
	out, _ := json.Marshal(env)
	return out
}
