// Package chapref reads the CHAP reference-coordinator test vectors kept in
// testvectors/chap-reference: the audit logs, requests and describe results the CHAP reference
// coordinators (TypeScript and Python) wrote. Tests of several packages read them through it.
package chapref

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Journeys are the journeys in the deterministic directories ts/ and py/; LiveJourneys those
// recorded once in live mode (real clock, random ids and keys) into live-ts/ and live-py/.
var (
	Journeys     = []string{"small", "unchained-prefix", "full", "burst", "profiles", "deep"}
	LiveJourneys = []string{"burst", "profiles"}
)

// CreatedIDs are the result members of the 0.2.10 coordinators that carry an id the
// coordinator made (tsk_, art_, dlb_, hnd_ + a ULID), by method.
var CreatedIDs = map[string]string{
	"task.create":       "task_id",
	"escalate.raise":    "new_task_id",
	"control.supersede": "new_task_id",
	"deliberate.open":   "deliberation_id",
	"handoff.propose":   "handoff_id",
	"whisper.ask":       "whisper_id",
	"control.snapshot":  "snapshot_artefact_id",
	"decide.override":   "override_artefact_id",
	"task.route":        "decision_artefact",
	"review.depth":      "decision_artefact",
	"escalate.auto":     "decision_artefact",
}

// Dir returns the directory of the vectors, testvectors/chap-reference.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "chap-reference")
}

// File returns the file name of directory dir (ts, py, live-ts, live-py), read from name.gz
// when only the compressed copy is stored (files over 1 MiB are kept gzip-compressed).
func File(dir, name string) ([]byte, error) {
	path := filepath.Join(Dir(), dir, name)
	data, err := os.ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	f, err := os.Open(path + ".gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s.gz: %w", path, err)
	}
	return io.ReadAll(zr)
}

// Lines returns the non-empty lines of the JSON Lines file name of directory dir.
func Lines(dir, name string) ([][]byte, error) {
	data, err := File(dir, name)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// Request is one line of <journey>.requests.jsonl: a request the driver sent and what the
// coordinator answered.
type Request struct {
	Method   string          `json:"method"`
	Accepted bool            `json:"accepted"`
	Envelope json.RawMessage `json:"envelope"` // the exact bytes sent
	Response struct {
		Result map[string]any `json:"result"`
	} `json:"response"`
}

// EnvelopeID returns the JSON-RPC id of the request's envelope.
func (r *Request) EnvelopeID() string {
	var env struct {
		ID string `json:"id"`
	}
	json.Unmarshal(r.Envelope, &env)
	return env.ID
}

// CreatedID returns the id the coordinator made for an accepted request and returned in its
// result (CreatedIDs), "" when it made none or the request named it itself.
func (r *Request) CreatedID() string {
	member, ok := CreatedIDs[r.Method]
	id, _ := r.Response.Result[member].(string)
	if !r.Accepted || !ok || id == "" || bytes.Contains(r.Envelope, []byte(`"`+id+`"`)) {
		return ""
	}
	return id
}

// Requests returns the requests of a journey in directory dir, in the order they were sent.
func Requests(dir, journey string) ([]Request, error) {
	lines, err := Lines(dir, journey+".requests.jsonl")
	if err != nil {
		return nil, err
	}
	out := make([]Request, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal(l, &out[i]); err != nil {
			return nil, fmt.Errorf("%s/%s.requests.jsonl line %d: %w", dir, journey, i+1, err)
		}
	}
	return out, nil
}
