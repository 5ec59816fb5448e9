package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/rawjson"
	"github.com/evident-log/evident/ledger"
)

func (s *Server) handleIngest(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	body, err := readBody(w, r, ingestBound(s))
	var records [][]byte
	if err == nil {
		records, err = splitBody(body, r.Header.Get("Content-Type"), s.c.MaxBatch)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The record limits are the service's policy, applied before the profile parses a record.
	for i, rec := range records {
		if err := s.c.Limits.Check(rec); err != nil {
			re := ledger.CanonicalRefusal(err).(*ledger.RecordError)
			re.Index = i
			s.fail(w, r, re)
			return
		}
	}
	acc, err := s.c.Pipeline.Ingest(r.Context(), chain, r.URL.Query().Get("profile"), records)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	last := acc[len(acc)-1]
	w.Header().Set("Location", "/v1/chains/"+chain+"/entries?from="+strconv.FormatUint(acc[0].Seq, 10)+"&limit="+strconv.Itoa(len(acc)))
	out := api.IngestResponse{Chain: chain, Accepted: make([]api.AcceptedEntry, len(acc)), Size: last.Seq + 1, Head: last.Link}
	added := 0
	for i, a := range acc {
		out.Accepted[i] = api.AcceptedEntry{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: a.Arrival, Duplicate: a.Duplicate}
		if !a.Duplicate {
			added++
		}
	}
	// Each counter counts what happened once: a batch that stored records, the records it
	// stored, the records it answered again without storing them (refusals are counted by
	// observe, whatever refused them).
	s.m.recordsAccepted.Add(uint64(added))
	s.m.recordsDuplicate.Add(uint64(len(acc) - added))
	status := http.StatusCreated
	if added > 0 {
		s.m.batches.Add(1)
	} else {
		// A retry of records that are all stored already: nothing was written. The chain may
		// have grown since, so its size and head are read again.
		status = http.StatusOK
		head, err := s.c.Pipeline.Head(r.Context(), chain)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Size, out.Head = head.Size, head.Head
	}
	writeIngestAnswer(w, status, &out)
}

// splitBody returns the records of an ingest body: one JSON object, a JSON array of
// objects, JSON Lines (Content-Type application/jsonl or application/x-ndjson, or several
// newline-separated objects), or the result of a CHAP Coordinator's audit.read
// ({"entries": [...], "next_seq": n}), whose entries are the records. Strict per-record
// parsing is the profile's job.
func splitBody(b []byte, contentType string, maxBatch int) ([][]byte, error) {
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, ledger.Refuse(ledger.CodeMalformed, "empty body")
	}
	var out [][]byte
	jsonl := jsonLines(contentType)
	if !jsonl && trimmed[0] == '{' && bytes.Contains(trimmed, []byte(`"next_seq"`)) {
		if page, ok := auditPage(trimmed); ok {
			trimmed = page // an audit.read result: its entries are the records
		}
	}
	switch {
	case trimmed[0] == '[' && !jsonl:
		return splitArray(trimmed, maxBatch)
	case !jsonl && multiLine(trimmed) && rawjson.Valid(trimmed):
		// One record over several lines (pretty-printed). A body of one line is its one
		// record whether it is valid JSON or not, and is left to the line split below
		// without a scan of it here: the profile parses each record strictly.
		out = append(out, bytes.TrimSpace(trimmed))
	default:
		for line := range bytes.SplitSeq(trimmed, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			out = append(out, line)
			if len(out) > maxBatch {
				return nil, ledger.Refuse(ledger.CodeTooLarge, "batch over %d records", maxBatch)
			}
		}
	}
	if len(out) == 0 {
		return nil, ledger.Refuse(ledger.CodeMalformed, "no records in the body")
	}
	return out, nil
}

// multiLine reports whether b has a line break before its trailing white space.
func multiLine(b []byte) bool {
	return bytes.IndexByte(bytes.TrimRight(b, " \t\r\n"), '\n') >= 0
}

// jsonLines reports whether an ingest body's Content-Type names JSON Lines
// (application/jsonl or application/x-ndjson, with any parameters). The usual
// application/json, or none, is answered without parsing.
func jsonLines(contentType string) bool {
	if contentType == "" || contentType == api.MediaJSON {
		return false
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/jsonl" || mt == "application/x-ndjson"
}

// handleEvidenceHead keeps the head a chain's sender reported for its own evidence chain: a
// body {evidence_head, audit_count?}, such as a CHAP workspace.describe result, bare or in a
// JSON-RPC response's result.
func (s *Server) handleEvidenceHead(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	body, err := readBody(w, r, evidenceHeadBound(s))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := api.ParseEvidenceHead(body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := s.c.Pipeline.ReportEvidenceHead(r.Context(), chain, req.EvidenceHead, req.AuditCount)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.EvidenceHeadResponse{Chain: chain, EvidenceHead: rep.Head, AuditCount: rep.AuditCount, Size: rep.Size,
		Status: rep.Status, ReportedAt: ledger.Timestamp(rep.ReportedAt)})
}

// auditPage returns the entries array of an audit.read result {"entries": [...], "next_seq": n}
// (both members present, entries an array), and false for any other object. The body is
// split without encoding/json, whose scanner refuses records nested past 10,000 levels.
func auditPage(b []byte) ([]byte, bool) {
	entries, ok, err := rawjson.Member(b, "entries")
	if err != nil || !ok || len(entries) == 0 || entries[0] != '[' {
		return nil, false
	}
	if _, ok, err := rawjson.Member(b, "next_seq"); err != nil || !ok {
		return nil, false
	}
	return entries, true
}

// splitArray returns the elements of a JSON array of records.
func splitArray(b []byte, maxBatch int) ([][]byte, error) {
	out, err := rawjson.Elements(b, maxBatch)
	var ee *rawjson.ElementError
	switch {
	case errors.Is(err, rawjson.ErrTooMany):
		return nil, ledger.Refuse(ledger.CodeTooLarge, "batch over %d records", maxBatch)
	case errors.As(err, &ee):
		return nil, &ledger.RecordError{Index: ee.Index, Code: ledger.CodeMalformed, Detail: fmt.Sprintf("batch element: %v", ee.Err)}
	case err != nil:
		return nil, ledger.Refuse(ledger.CodeMalformed, "batch: %v", err)
	case len(out) == 0:
		return nil, ledger.Refuse(ledger.CodeMalformed, "no records in the body")
	}
	return out, nil
}

// handleSeal seals the chain: 201 Created with the seal this request made, or 200 OK with
// the chain's last seal answered again when the chain has not moved since (a resend, or a
// seal the timer or another replica made), as a resent batch is 200 (docs/errors.md, Retries).
// A close that does not parse is 400 bad_query and seals nothing.
func (s *Server) handleSeal(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	closeChain, err := queryBool(r, "close", false)
	if err != nil {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), -1)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.c.SealTimeout)
	defer cancel()
	res, err := s.c.Pipeline.Seal(ctx, chain, closeChain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		s.m.seals.Add(1)
		status = http.StatusCreated
	}
	if acceptsCOSE(r) {
		w.Header().Set("Content-Type", api.MediaCOSESign1)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		w.Write(res.Transparent)
		return
	}
	writeJSON(w, status, api.SealResponse{Seal: res.Seal, N: res.N, LogIndex: res.LogIndex, Checkpoint: string(res.Checkpoint),
		Receipt: base64.StdEncoding.EncodeToString(res.Receipt), Transparent: base64.StdEncoding.EncodeToString(res.Transparent)})
}

func acceptsCOSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), api.MediaCOSE)
}

const maxPage = 1000

func (s *Server) handleEntries(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	from, err := queryUint(r, "from", 0)
	if err != nil {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), -1)
		return
	}
	limit, err := queryUint(r, "limit", 100)
	if err != nil || limit == 0 || limit > maxPage {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, fmt.Sprintf("limit must be 1..%d", maxPage), -1)
		return
	}
	f, err := entryFilter(r) // entryfilter.go: method, sender, since, until, task_id, logical_id, tag, outcome
	if err != nil {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), -1)
		return
	}
	f.From, f.Limit = from, int(limit)
	if _, err := s.c.Pipeline.Head(r.Context(), chain); err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := s.c.Store.Entries(r.Context(), chain, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.EntriesPage{Chain: chain, Entries: make([]api.EntryView, len(es))}
	for i, e := range es {
		out.Entries[i] = api.EntryView{Seq: e.Seq, Prev: e.Prev, Link: e.Link, Arrival: ledger.Timestamp(e.Arrival), Method: e.Method, Sender: e.Sender, Signed: e.Signed, Attrs: e.Attrs, Record: e.Record, Meta: e.Meta}
	}
	if len(es) == int(limit) {
		n := es[len(es)-1].Seq + 1
		out.Next = &n
	}
	writeEntriesPage(w, &out)
}

// writeEntriesPage writes a page of entries as JSON, each entry's record and metadata (stored
// canonical JSON) verbatim: encoding/json re-scans a json.RawMessage and fails on one nested
// past 10,000 levels, which evidentd takes. The rest of each entry is encoding/json's.
func writeEntriesPage(w http.ResponseWriter, page *api.EntriesPage) {
	buf := append([]byte(`{"chain":`), mustJSON(page.Chain)...)
	buf = append(buf, `,"entries":[`...)
	for i, e := range page.Entries {
		if i > 0 {
			buf = append(buf, ',')
		}
		record, meta := e.Record, e.Meta
		e.Record, e.Meta = nil, nil
		head := mustJSON(e) // ends "record":null} (meta, empty, is omitted)
		buf = append(buf, bytes.TrimSuffix(head, []byte("null}"))...)
		buf = append(buf, record...)
		if len(meta) > 0 {
			buf = append(buf, `,"meta":`...)
			buf = append(buf, meta...)
		}
		buf = append(buf, '}')
	}
	buf = append(buf, ']')
	if page.Next != nil {
		buf = append(buf, `,"next":`...)
		buf = strconv.AppendUint(buf, *page.Next, 10)
	}
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

// mustJSON is encoding/json's encoding of a value that always encodes (no RawMessage in it).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *Server) handleSeals(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	if _, err := s.c.Pipeline.Head(r.Context(), chain); err != nil {
		s.fail(w, r, err)
		return
	}
	seals, err := s.c.Store.Seals(r.Context(), chain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.SealsPage{Chain: chain, Seals: make([]api.SealView, len(seals))}
	for i, sl := range seals {
		out.Seals[i] = api.SealView{N: sl.N, Size: sl.Size, Closed: sl.Closed, SealedAt: ledger.Timestamp(sl.SealedAt), Registered: sl.Registered, LogIndex: sl.LogIndex, Entry: ledger.Link(sl.EntryHash).String()}
	}
	writeJSON(w, http.StatusOK, out)
}
