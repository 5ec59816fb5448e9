package chap

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/testvectors/chapref"
)

// refFile returns impl's file name (chapref.File: from name.gz when only the compressed copy is
// stored).
func refFile(t *testing.T, impl, name string) []byte {
	t.Helper()
	data, err := chapref.File(impl, name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// refLines returns the non-empty lines of impl's JSON Lines file name.
func refLines(t *testing.T, impl, name string) [][]byte {
	t.Helper()
	lines, err := chapref.Lines(impl, name)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// refAudit returns the lines of impl's <journey>.audit.jsonl.
func refAudit(t *testing.T, impl, journey string) [][]byte {
	t.Helper()
	return refLines(t, impl, journey+".audit.jsonl")
}

// refCanon is the tests' own JCS: the CHAP number rule without the profile's depth and size
// limits, so that the deep journey's entries (1,002 levels, a 3 MiB string) can be checked.
var refCanon = canonical.Options{SafeIntegersOnly: true, MaxDepth: 10000, MaxSize: 64 << 20}

// refJourneys are the journeys in the deterministic directories ts/ and py/, refLiveJourneys
// those recorded once in live mode into live-ts/ and live-py/.
var (
	refJourneys     = chapref.Journeys
	refLiveJourneys = chapref.LiveJourneys
)

// TestReferenceVectorsAgree keeps the README's claim true: the TypeScript and Python
// coordinators recorded the same envelopes with the same prev_hash in every journey.
// In deep, ts has one entry more at the end: the 1,000-level task.create that Python's
// dispatch raises RecursionError on. Elsewhere verify_chain.json is byte-identical too.
func TestReferenceVectorsAgree(t *testing.T) {
	for _, journey := range refJourneys {
		t.Run(journey, func(t *testing.T) {
			ts, py := refAudit(t, "ts", journey), refAudit(t, "py", journey)
			tsOnly := 0
			if journey == "deep" {
				tsOnly = 1
			}
			if len(ts) != len(py)+tsOnly || len(py) == 0 {
				t.Fatalf("ts has %d entries, py %d", len(ts), len(py))
			}
			for i := range py {
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
			// Where the entries are the same, so are the coordinators' own verdicts on them.
			if tsOnly == 0 && !bytes.Equal(refFile(t, "ts", journey+".verify_chain.json"), refFile(t, "py", journey+".verify_chain.json")) {
				t.Fatal("verify_chain.json differs between ts and py")
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
	c, err := canonical.Canonicalize(e.Envelope, refCanon)
	if err != nil {
		t.Fatal(err)
	}
	e.envelope = string(c)
	return e
}

// TestReferenceVectorsCoordinatorAdded keeps the README's other claim true: every recorded
// signature of the full journey verifies as recorded except the whisper.answer at seq 31, the
// one envelope the coordinators changed after checking it (coordinator_added); in profiles
// (deterministic and live) the same holds of the whisper.answer at seq 17, and burst has none.
// The deep journey is past the profile's limits (see TestReferenceVectorsDeepLimits).
func TestReferenceVectorsCoordinatorAdded(t *testing.T) {
	cases := []struct {
		journey string
		impls   []string
		want    []uint64
	}{
		{"full", []string{"ts", "py"}, []uint64{31}},
		{"burst", []string{"ts", "py", "live-ts", "live-py"}, nil},
		{"profiles", []string{"ts", "py", "live-ts", "live-py"}, []uint64{17}},
	}
	for _, tc := range cases {
		for _, impl := range tc.impls {
			t.Run(tc.journey+"/"+impl, func(t *testing.T) {
				refAdmit(t, impl, tc.journey, tc.want)
			})
		}
	}
}

// refAdmit appends impl's journey to a chain of the profile, checks every signature the
// admissions carry, and that exactly the seqs in want are marked coordinator_added.
func refAdmit(t *testing.T, impl, journey string, want []uint64) {
	t.Helper()
	var c *ledger.Chain
	var added []uint64
	for i, line := range refAudit(t, impl, journey) {
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
	if !slices.Equal(added, want) {
		t.Fatalf("coordinator_added at seqs %v, want %v", added, want)
	}
}

// refKeys returns the public keys of impl's journey by kid, from keys.json: each seed is
// checked to give the JWK recorded beside it.
func refKeys(t *testing.T, impl, journey string) map[string]ed25519.PublicKey {
	t.Helper()
	var doc struct {
		Participants map[string]struct {
			Keys []struct {
				Kid     string `json:"kid"`
				SeedHex string `json:"seed_hex"`
				JWK     struct {
					X string `json:"x"`
				} `json:"jwk"`
			} `json:"keys"`
		} `json:"participants"`
	}
	if err := json.Unmarshal(refFile(t, impl, journey+".keys.json"), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]ed25519.PublicKey{}
	for _, p := range doc.Participants {
		for _, k := range p.Keys {
			seed, err := hex.DecodeString(k.SeedHex)
			if err != nil || len(seed) != ed25519.SeedSize {
				t.Fatalf("kid %s: seed %q", k.Kid, k.SeedHex)
			}
			pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
			if base64.RawURLEncoding.EncodeToString(pub) != k.JWK.X {
				t.Fatalf("kid %s: the seed's public key is not the JWK's x", k.Kid)
			}
			out[k.Kid] = pub
		}
	}
	return out
}

// refParseEnvelope parses an envelope under refCanon.
func refParseEnvelope(t *testing.T, raw []byte) *canonical.Object {
	t.Helper()
	v, err := canonical.Parse(raw, refCanon)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := v.(*canonical.Object)
	if !ok {
		t.Fatalf("envelope is not an object: %.80s", raw)
	}
	return o
}

func refEncode(t *testing.T, o *canonical.Object) []byte {
	t.Helper()
	b, err := canonical.Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refSigned reports whether env's top-level sig verifies over JCS(env without sig).
func refSigned(t *testing.T, env *canonical.Object, keys map[string]ed25519.PublicKey) bool {
	t.Helper()
	tag, ok := env.String("sig")
	if !ok {
		return false
	}
	s, err := ParseSignature(tag)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := keys[s.Kid]
	if !ok {
		t.Fatalf("kid %s is not in keys.json", s.Kid)
	}
	return ed25519.Verify(pub, refEncode(t, env.Without("sig")), s.Value)
}

// TestReferenceVectorsChains checks every journey of every directory (ts, py, live-ts,
// live-py) on its own, without the profile: the chain recomputed from the audit entries
// (sha256(JCS(envelope) || previous head as text), from the zero hash) matches every
// prev_hash, describe's evidence_head and verify_chain's chain_head; audit_count is the
// number of entries; every entry is the envelope of an accepted request, byte for byte in
// JCS, and its signature verifies, except the whisper.answer entries the coordinator added
// params.task_id to (full seq 31, profiles seq 17), whose signature verifies over the
// envelope as sent.
func TestReferenceVectorsChains(t *testing.T) {
	added := map[string][]uint64{"full": {31}, "profiles": {17}}
	for _, impl := range []string{"ts", "py", "live-ts", "live-py"} {
		journeys := refJourneys
		if strings.HasPrefix(impl, "live-") {
			journeys = refLiveJourneys
		}
		for _, journey := range journeys {
			t.Run(impl+"/"+journey, func(t *testing.T) {
				keys := refKeys(t, impl, journey)
				sent := map[string][]byte{} // envelope id -> the envelope of an accepted request
				var order []string
				for _, l := range refLines(t, impl, journey+".requests.jsonl") {
					var r struct {
						Accepted bool            `json:"accepted"`
						Envelope json.RawMessage `json:"envelope"`
					}
					if err := json.Unmarshal(l, &r); err != nil {
						t.Fatal(err)
					}
					var id struct {
						ID string `json:"id"`
					}
					json.Unmarshal(r.Envelope, &id)
					if r.Accepted {
						sent[id.ID] = r.Envelope
						order = append(order, id.ID)
					}
				}
				var audit struct {
					Entries []struct {
						Seq      uint64          `json:"seq"`
						Arrived  string          `json:"arrived"`
						Envelope json.RawMessage `json:"envelope"`
						PrevHash *string         `json:"prev_hash"`
					} `json:"entries"`
					NextSeq uint64 `json:"next_seq"`
				}
				if err := json.Unmarshal(refFile(t, impl, journey+".audit.json"), &audit); err != nil {
					t.Fatal(err)
				}
				if lines := refAudit(t, impl, journey); len(lines) != len(audit.Entries) || audit.NextSeq != uint64(len(lines)) {
					t.Fatalf("audit.jsonl has %d entries, audit.json %d (next_seq %d)", len(lines), len(audit.Entries), audit.NextSeq)
				}
				var head string
				var modified []uint64
				next := 0 // position in order: entries follow the accepted requests in order
				for i, e := range audit.Entries {
					if e.Seq != uint64(i) {
						t.Fatalf("entry %d has seq %d", i, e.Seq)
					}
					env := refParseEnvelope(t, e.Envelope)
					jcs := refEncode(t, env)
					switch {
					case e.PrevHash == nil && head != "":
						t.Fatalf("seq %d: no prev_hash after a chained entry", i)
					case e.PrevHash != nil && head == "":
						head = "sha256:" + strings.Repeat("0", 64) // chaining starts (again) from the zero hash
						fallthrough
					case e.PrevHash != nil:
						if *e.PrevHash != head {
							t.Fatalf("seq %d: prev_hash %s, recomputed %s", i, *e.PrevHash, head)
						}
						sum := sha256.Sum256(append(slices.Clone(jcs), head...))
						head = "sha256:" + hex.EncodeToString(sum[:])
					}
					id, _ := env.String("id")
					for next < len(order) && order[next] != id {
						next++
					}
					if next == len(order) {
						t.Fatalf("seq %d: envelope %s is not an accepted request's (or out of order)", i, id)
					}
					next++
					asSent := refParseEnvelope(t, sent[id])
					if bytes.Equal(refEncode(t, asSent), jcs) {
						if !refSigned(t, env, keys) {
							t.Fatalf("seq %d: signature does not verify", i)
						}
						continue
					}
					// Recorded differently from what was sent: only params.task_id may have been added.
					method, _ := env.String("method")
					params, _ := env.Object("params")
					if _, had := asSent.Object("params"); !had || method != "whisper.answer" || params == nil ||
						!bytes.Equal(refEncode(t, env.WithoutIn("params", "task_id")), refEncode(t, asSent)) {
						t.Fatalf("seq %d (%s): recorded envelope differs from the one sent", i, method)
					}
					if refSigned(t, env, keys) || !refSigned(t, asSent, keys) {
						t.Fatalf("seq %d: signature verifies over the recorded envelope, or not over the one sent", i)
					}
					modified = append(modified, uint64(i))
				}
				if !slices.Equal(modified, added[journey]) {
					t.Fatalf("coordinator-modified entries at %v, want %v", modified, added[journey])
				}
				var describe struct {
					EvidenceHead string `json:"evidence_head"`
					AuditCount   int    `json:"audit_count"`
				}
				if err := json.Unmarshal(refFile(t, impl, journey+".describe.json"), &describe); err != nil {
					t.Fatal(err)
				}
				if describe.EvidenceHead != head || describe.AuditCount != len(audit.Entries) {
					t.Fatalf("describe: evidence_head %s audit_count %d; recomputed %s from %d entries",
						describe.EvidenceHead, describe.AuditCount, head, len(audit.Entries))
				}
				var verify struct {
					OK           bool   `json:"ok"`
					ChainHead    string `json:"chain_head"`
					EntriesTotal int    `json:"entries_total"`
				}
				if err := json.Unmarshal(refFile(t, impl, journey+".verify_chain.json"), &verify); err != nil {
					t.Fatal(err)
				}
				if verify.ChainHead != head || verify.EntriesTotal != len(audit.Entries) {
					t.Fatalf("verify_chain: chain_head %s entries_total %d", verify.ChainHead, verify.EntriesTotal)
				}
			})
		}
	}
}

// refULIDms returns the millisecond time in the first 10 characters of a ULID.
func refULIDms(t *testing.T, ulid string) int64 {
	t.Helper()
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	if len(ulid) != 26 {
		t.Fatalf("not a ULID: %q", ulid)
	}
	var ms int64
	for _, c := range ulid[:10] {
		d := strings.IndexRune(crockford, c)
		if d < 0 {
			t.Fatalf("not a ULID: %q", ulid)
		}
		ms = ms<<5 | int64(d)
	}
	return ms
}

func refMillis(t *testing.T, ts string) int64 {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Fatal(err)
	}
	return at.UnixMilli()
}

// TestReferenceVectorsLiveClock keeps the README's account of the live recordings true: every
// id a coordinator made (its result names it, the request did not) is a ULID whose time is
// no later than the arrived time of the entry recording its request and no earlier than the
// arrived time of the entry before; arrived never goes back; the client's ts and envelope id
// are no later than arrived.
func TestReferenceVectorsLiveClock(t *testing.T) {
	for _, impl := range []string{"live-ts", "live-py"} {
		for _, journey := range refLiveJourneys {
			t.Run(impl+"/"+journey, func(t *testing.T) {
				arrived := map[string]int64{} // envelope id -> arrived ms
				var prevOf = map[string]int64{}
				var last int64 = -1
				for i, l := range refAudit(t, impl, journey) {
					var e struct {
						Arrived  string `json:"arrived"`
						Envelope struct {
							ID     string `json:"id"`
							Params struct {
								TS string `json:"ts"`
							} `json:"params"`
						} `json:"envelope"`
					}
					if err := json.Unmarshal(l, &e); err != nil {
						t.Fatal(err)
					}
					at := refMillis(t, e.Arrived)
					if at < last {
						t.Fatalf("seq %d: arrived goes back", i)
					}
					if refMillis(t, e.Envelope.Params.TS) > at || refULIDms(t, e.Envelope.ID) > at {
						t.Fatalf("seq %d: ts or envelope id later than arrived", i)
					}
					arrived[e.Envelope.ID], prevOf[e.Envelope.ID] = at, last
					last = at
				}
				n := 0
				minA, maxA, minP, maxP := int64(1<<62), int64(-1<<62), int64(1<<62), int64(-1<<62)
				reqs, err := chapref.Requests(impl, journey)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range reqs {
					id := r.CreatedID()
					if id == "" {
						continue
					}
					prefix, ulid, _ := strings.Cut(id, "_")
					if !slices.Contains([]string{"tsk", "art", "dlb", "hnd"}, prefix) {
						t.Fatalf("%s made %q", r.Method, id)
					}
					envID := r.EnvelopeID()
					at, ok := arrived[envID]
					if !ok {
						t.Fatalf("%s %s: its request is not in the audit log", r.Method, id)
					}
					ms := refULIDms(t, ulid)
					a, p := at-ms, ms-prevOf[envID]
					if a < 0 || p < 0 {
						t.Fatalf("%s %s: id time %d, arrived %d, previous entry's arrived %d", r.Method, id, ms, at, prevOf[envID])
					}
					minA, maxA, minP, maxP = min(minA, a), max(maxA, a), min(minP, p), max(maxP, p)
					n++
				}
				if n == 0 {
					t.Fatal("no created ids")
				}
				t.Logf("%d ids: arrived - id time %d..%d ms; id time - previous arrived %d..%d ms", n, minA, maxA, minP, maxP)
			})
		}
	}
}

// TestReferenceVectorsDeepLimits: each entry of the deep journey is either admitted by the
// profile's Parse or refused only for its nesting or size (canonical.ErrTooDeep,
// canonical.ErrTooLarge; the refusals are logged), and the entries before the first refusal
// (among them the non-ASCII task.create at seq 3) are admitted to a chain with their
// signatures verified.
func TestReferenceVectorsDeepLimits(t *testing.T) {
	for _, impl := range []string{"ts", "py"} {
		t.Run(impl, func(t *testing.T) {
			var c *ledger.Chain
			admitted, refused := 0, false
			for i, line := range refAudit(t, impl, "deep") {
				r, err := Parse(line)
				if err != nil {
					if !errors.Is(err, canonical.ErrTooDeep) && !errors.Is(err, canonical.ErrTooLarge) {
						t.Fatalf("seq %d: %v", i, err)
					}
					t.Logf("seq %d (%d bytes): %v", i, len(line), err)
					refused = true
					continue
				}
				if refused {
					continue // the chain cannot go on past a refused entry
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
				if a.Admission.Verify == nil && r.Method != "workspace.create" && r.Method != "participant.join" {
					t.Fatalf("seq %d (%s): signature not checked", i, r.Method)
				}
				if a.Admission.Verify != nil {
					if err := a.Admission.Verify(); err != nil {
						t.Fatalf("seq %d: %v", i, err)
					}
				}
				admitted++
			}
			if admitted < 6 {
				t.Fatalf("%d entries admitted before the first refusal, want 6", admitted)
			}
		})
	}
}
