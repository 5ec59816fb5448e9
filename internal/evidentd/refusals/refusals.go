// Package refusals keeps what witnesses answer when they refuse evidentd's checkpoint as
// contradicting one they cosigned (log.IsRefusal): either the log's signing key signed
// another history, or the witness is wrong, and an operator must learn which. Each refusal
// is kept durably as a misbehaviour.Refusal file in the data directory, logged at ERROR
// and counted in evident_witness_refusals_total{witness,kind}.
package refusals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogwitness"
)

// Dir is the directory of the data directory that holds the refusals.
const Dir = "misbehaviour"

// DefaultMax bounds the refusal files kept; later refusals are counted and logged, not kept.
const DefaultMax = 1000

// fileTime is the time part of a refusal file's name: its names sort by time.
const fileTime = "20060102T150405Z"

// Options configures a Keeper.
type Options struct {
	// Max bounds the files kept (default DefaultMax).
	Max int
	// LogKeyFile is the log's verifier key file, named in the log line as what to check a
	// refusal with.
	LogKeyFile string
	// Logger receives the ERROR line of each refusal (default slog.Default()).
	Logger *slog.Logger
}

// Keeper keeps refusals in one directory. Its methods are safe for concurrent use.
type Keeper struct {
	dir     string
	o       Options
	refused *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]bool // ids (file name suffixes) of the refusals kept
	full bool            // the "not kept" line was logged
}

// Open returns the keeper of dir and learns the refusals dir already holds; dir is created
// with the first refusal kept.
func Open(dir string, o Options) (*Keeper, error) {
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("refusals: %w", err)
	}
	k := &Keeper{dir: dir, o: o, seen: map[string]bool{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "evident_witness_refusals_total",
			Help: "Answers of witnesses refusing the log's checkpoint as contradicting one they cosigned, by witness and kind."},
			[]string{"witness", "kind"})}
	for _, e := range ents {
		if id, ok := fileID(e.Name()); ok && e.Type().IsRegular() {
			k.seen[id] = true
		}
	}
	return k, nil
}

// Kept returns how many refusals the directory holds.
func (k *Keeper) Kept() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.seen)
}

// Collector is the evident_witness_refusals_total counter, for a Prometheus registry.
func (k *Keeper) Collector() prometheus.Collector { return k.refused }

// Keep counts r, and unless the same witness already refused the same checkpoint the same
// way (a fail-closed log posts it again at every interval), writes it to a new file
// (temp file, fsync, rename, fsync directory) and logs at ERROR what it means. It is
// log.WitnessConfig.OnRefusal.
func (k *Keeper) Keep(r *misbehaviour.Refusal) {
	kind := Kind(r)
	k.refused.WithLabelValues(r.Witness, kind).Inc()
	id := refusalID(r)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen[id] {
		return
	}
	attrs := []any{"witness", r.Witness, "url", r.URL, "status", r.Status, "kind", kind, "proof", r.Proof != nil}
	if len(k.seen) >= k.o.Max {
		if !k.full {
			k.full = true
			k.o.Logger.Error(fmt.Sprintf(refusedLead+"; %s already holds %d refusals, so this one and later ones are not kept (they are counted in evident_witness_refusals_total)", k.dir, len(k.seen)), attrs...)
		}
		return
	}
	name, err := k.write(r, id)
	if err != nil {
		k.o.Logger.Error(refusedLead+"; the refusal could not be kept", append(attrs, "err", err)...)
		return
	}
	k.seen[id] = true
	k.o.Logger.Error(message(name, k.o.LogKeyFile, r.Proof != nil), attrs...)
}

// refusedLead starts every ERROR line about a refusal: what it means.
const refusedLead = "a witness refused the log's checkpoint as contradicting one it cosigned: the log's signing key may have signed another history"

// message is the ERROR line of a refusal kept in file.
func message(file, logKey string, proof bool) string {
	m := refusedLead + "; the refusal is kept in " + file
	if !proof {
		return m + "; the witness sent no proof with it: ask its operator for the checkpoint it holds (its GET /<origin id>/forks)"
	}
	return m + "; check it with evident misbehaviour check " + file + " --log-key " + logKey
}

// write keeps r durably as a new file named by the time it was observed and id.
func (k *Keeper) write(r *misbehaviour.Refusal, id string) (string, error) {
	b, err := r.Marshal()
	if err != nil {
		return "", err
	}
	at, err := time.Parse(time.RFC3339, r.Observed)
	if err != nil {
		at = time.Now()
	}
	if err := durable.Mkdir(k.dir, 0o700); err != nil {
		return "", fmt.Errorf("refusals: %w", err)
	}
	name := filepath.Join(k.dir, at.UTC().Format(fileTime)+"-"+id+".json")
	if err := durable.WriteFile(name, b, 0o600); err != nil {
		return "", fmt.Errorf("refusals: %w", err)
	}
	return name, nil
}

// Kind is the kind of misbehaviour r reports: the proof's when the witness sent one, else
// what its status means (409: the same tree size with another root; 422: a consistency
// proof that failed).
func Kind(r *misbehaviour.Refusal) string {
	switch {
	case r.Proof != nil:
		return r.Proof.Kind
	case r.Status == http.StatusConflict:
		return misbehaviour.KindSameSize
	case r.Status == http.StatusUnprocessableEntity:
		return misbehaviour.KindInconsistent
	}
	return "status_" + strconv.Itoa(r.Status)
}

// refusalID names a refusal by what makes it the same refusal again: the witness's URL, the
// status and the request without the checkpoint's signatures (which may change between two
// posts of one checkpoint). It is 16 hex digits.
func refusalID(r *misbehaviour.Refusal) string {
	req := []byte(r.Request)
	if q, err := tlogwitness.ParseRequest(req); err == nil {
		text, _, _ := bytes.Cut(q.Checkpoint, []byte("\n\n"))
		q.Checkpoint = text
		req = q.Marshal()
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n", r.URL, r.Status)
	h.Write(req)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// fileID is the id of a refusal file's name, "<time>-<id>.json".
func fileID(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok || strings.HasPrefix(name, ".") {
		return "", false
	}
	_, id, ok := strings.Cut(base, "-")
	if _, err := hex.DecodeString(id); !ok || err != nil || len(id) != 16 {
		return "", false
	}
	return id, true
}
