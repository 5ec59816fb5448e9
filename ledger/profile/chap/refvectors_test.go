package chap

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// refVectors is testvectors/chap-reference: the chains the CHAP reference coordinators wrote.
var refVectors = filepath.Join("..", "..", "..", "testvectors", "chap-reference")

// refAudit returns the lines of impl's <journey>.audit.jsonl.
func refAudit(t *testing.T, impl, journey string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(refVectors, impl, journey+".audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, bytes.Clone(l))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReferenceVectorsAgree keeps the README's claim true: the TypeScript and Python
// coordinators recorded the same envelopes with the same prev_hash in every journey.
func TestReferenceVectorsAgree(t *testing.T) {
	for _, journey := range []string{"small", "unchained-prefix", "full"} {
		t.Run(journey, func(t *testing.T) {
			ts, py := refAudit(t, "ts", journey), refAudit(t, "py", journey)
			if len(ts) != len(py) || len(ts) == 0 {
				t.Fatalf("ts has %d entries, py %d", len(ts), len(py))
			}
			for i := range ts {
				a, b := refEntry(t, ts[i]), refEntry(t, py[i])
				if a.Seq != b.Seq || a.Seq != uint64(i) {
					t.Fatalf("line %d: seq ts %d, py %d", i, a.Seq, b.Seq)
				}
				if a.envelope != b.envelope {
					t.Fatalf("seq %d: envelopes differ\nts %s\npy %s", i, a.envelope, b.envelope)
				}
				if a.PrevHash != b.PrevHash {
					t.Fatalf("seq %d: prev_hash ts %q, py %q", i, a.PrevHash, b.PrevHash)
				}
			}
		})
	}
}

type refAuditEntry struct {
	Seq      uint64          `json:"seq"`
	Envelope json.RawMessage `json:"envelope"`
	PrevHash string          `json:"prev_hash"`
	envelope string          // JCS of Envelope
}

func refEntry(t *testing.T, line []byte) refAuditEntry {
	t.Helper()
	var e refAuditEntry
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatal(err)
	}
	c, err := canonical.Canonicalize(e.Envelope, canonical.CHAP)
	if err != nil {
		t.Fatal(err)
	}
	e.envelope = string(c)
	return e
}

// TestReferenceVectorsCoordinatorAdded keeps the README's other claim true: every recorded
// signature of the full journey verifies as recorded except the whisper.answer at seq 31, the
// one envelope the coordinators changed after checking it (coordinator_added).
func TestReferenceVectorsCoordinatorAdded(t *testing.T) {
	for _, impl := range []string{"ts", "py"} {
		t.Run(impl, func(t *testing.T) {
			var c *ledger.Chain
			var added []uint64
			for i, line := range refAudit(t, impl, "full") {
				r, err := Parse(line)
				if err != nil {
					t.Fatalf("seq %d: %v", i, err)
				}
				if c == nil {
					if c, err = ledger.NewChain(r.Workspace, Adapter{}); err != nil {
						t.Fatal(err)
					}
				}
				a, err := c.Append(line, time.Unix(0, 0))
				if err != nil {
					t.Fatalf("seq %d: %v", i, err)
				}
				if a.Admission.Verify != nil {
					if err := a.Admission.Verify(); err != nil {
						t.Fatalf("seq %d: %v", i, err)
					}
				}
				if ca := a.Admission.Attrs[AttrCoordinatorAdded]; len(ca) > 0 {
					if !slices.Equal(ca, []string{"params.task_id"}) || r.Method != "whisper.answer" {
						t.Fatalf("seq %d (%s): coordinator_added %v", i, r.Method, ca)
					}
					added = append(added, a.Seq)
				}
			}
			if !slices.Equal(added, []uint64{31}) {
				t.Fatalf("coordinator_added at seqs %v, want [31]", added)
			}
		})
	}
}
