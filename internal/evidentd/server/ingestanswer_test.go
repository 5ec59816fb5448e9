package server

import (
	"bytes"
	"crypto/sha256"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/ledger"
)

// encodedByJSON is the answer writeJSON gives for r: the reference writeIngestAnswer is held to.
func encodedByJSON(t testing.TB, status int, r api.IngestResponse) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	writeJSON(rec, status, r)
	return rec
}

// TestIngestAnswerMatchesEncodingJSON: the ingest answer is byte for byte what encoding/json
// wrote before, headers included, for plain and escaped strings, duplicates, several
// entries and the extremes of the numbers.
func TestIngestAnswerMatchesEncodingJSON(t *testing.T) {
	l1, l2 := ledger.Link(sha256.Sum256([]byte("a"))), ledger.Link(sha256.Sum256([]byte("b")))
	entry := func(seq uint64, dup bool) api.AcceptedEntry {
		return api.AcceptedEntry{Seq: seq, Prev: l1, Link: l2, Arrival: "2026-01-01T00:00:00.004Z", Duplicate: dup}
	}
	for _, tc := range []struct {
		name string
		r    api.IngestResponse
	}{
		{"one entry", api.IngestResponse{Chain: "wsp_single_3", Accepted: []api.AcceptedEntry{entry(4, false)}, Size: 5, Head: l2}},
		{"genesis links, seq 0", api.IngestResponse{Chain: "c", Accepted: []api.AcceptedEntry{{Arrival: "2026-01-01T00:00:00.000Z"}}, Size: 1}},
		{"several with a duplicate", api.IngestResponse{Chain: "envelope:wf:1", Accepted: []api.AcceptedEntry{entry(7, true), entry(8, false), entry(9, false)}, Size: 10, Head: l1}},
		{"all duplicates", api.IngestResponse{Chain: "a.b-c@d", Accepted: []api.AcceptedEntry{entry(0, true), entry(1, true)}, Size: 2, Head: l1}},
		{"largest numbers", api.IngestResponse{Chain: "x", Accepted: []api.AcceptedEntry{entry(math.MaxUint64, false)}, Size: math.MaxUint64, Head: l2}},
		{"HTML and quotes in the chain id", api.IngestResponse{Chain: `a<b>&"c'`, Accepted: []api.AcceptedEntry{entry(1, false)}, Size: 2, Head: l2}},
		{"only <", api.IngestResponse{Chain: "a<b", Accepted: []api.AcceptedEntry{entry(1, false)}, Size: 2}},
		{"only >", api.IngestResponse{Chain: "a>b", Accepted: []api.AcceptedEntry{entry(1, false)}, Size: 2}},
		{"only &", api.IngestResponse{Chain: "a&b", Accepted: []api.AcceptedEntry{entry(1, false)}, Size: 2}},
		{"only a backslash", api.IngestResponse{Chain: `a\b`, Accepted: []api.AcceptedEntry{entry(1, false)}, Size: 2}},
		{"only a control character", api.IngestResponse{Chain: "a\tb", Accepted: []api.AcceptedEntry{entry(1, false)}, Size: 2}},
		{"only non-ASCII", api.IngestResponse{Chain: "a\u2028b", Accepted: []api.AcceptedEntry{{Arrival: "é"}}, Size: 1}},
		{"control, non-ASCII and line separators", api.IngestResponse{Chain: "t\tab\\é\u2028\x7f", Accepted: []api.AcceptedEntry{{Arrival: "\x00\xff"}}, Size: 1}},
		{"empty accepted", api.IngestResponse{Chain: "c", Accepted: []api.AcceptedEntry{}}},
		{"nil accepted", api.IngestResponse{Chain: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, status := range []int{http.StatusCreated, http.StatusOK} {
				want := encodedByJSON(t, status, tc.r)
				got := httptest.NewRecorder()
				writeIngestAnswer(got, status, &tc.r)
				if got.Code != want.Code {
					t.Errorf("status %d, want %d", got.Code, want.Code)
				}
				for _, h := range []string{"Content-Type", "Cache-Control"} {
					if got.Header().Get(h) != want.Header().Get(h) {
						t.Errorf("%s %q, want %q", h, got.Header().Get(h), want.Header().Get(h))
					}
				}
				if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Errorf("body\n%s\nwant\n%s", got.Body, want.Body)
				}
			}
		})
	}
}

// TestIngestAnswerKnowsEveryField: appendIngestResponse writes the fields it knows of; a
// field added to api.IngestResponse or api.AcceptedEntry fails here until it writes that
// one too (and the cases above give it a value).
func TestIngestAnswerKnowsEveryField(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want []string
	}{
		{reflect.TypeFor[api.IngestResponse](), []string{"chain", "accepted", "size", "head"}},
		{reflect.TypeFor[api.AcceptedEntry](), []string{"seq", "prev", "link", "arrival", "duplicate,omitempty"}},
	} {
		var got []string
		for f := range tc.typ.Fields() {
			got = append(got, f.Tag.Get("json"))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s has the JSON fields %q; appendIngestResponse writes %q", tc.typ, got, tc.want)
		}
	}
}

// FuzzIngestAnswer: for any chain id, arrival and numbers, appendIngestResponse writes what
// encoding/json writes.
func FuzzIngestAnswer(f *testing.F) {
	f.Add("wsp_single_3", "2026-01-01T00:00:00.004Z", uint64(4), false, uint8(1))
	f.Add(`a<b>&"c'`, "\u2028\x00", uint64(math.MaxUint64), true, uint8(3))
	f.Add("", "", uint64(0), false, uint8(0))
	f.Fuzz(func(t *testing.T, chain, arrival string, seq uint64, dup bool, n uint8) {
		r := api.IngestResponse{Chain: chain, Size: seq + uint64(n), Head: ledger.Link(sha256.Sum256([]byte(chain)))}
		if n > 0 {
			r.Accepted = make([]api.AcceptedEntry, n%8)
		}
		for i := range r.Accepted {
			r.Accepted[i] = api.AcceptedEntry{Seq: seq + uint64(i), Prev: r.Head, Arrival: arrival, Duplicate: dup && i%2 == 0}
		}
		want := encodedByJSON(t, http.StatusCreated, r).Body.Bytes()
		if got := appendIngestResponse(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
	})
}
