package chap

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
)

// reflected is State's JSON as encoding/json writes it, which MarshalJSON must match byte
// for byte (persisted states written before and after it are the same bytes).
func reflected(s *State) ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

func sameJSON(t *testing.T, what string, s *State) {
	t.Helper()
	got, err := s.MarshalJSON()
	want, werr := reflected(s)
	if (err != nil) != (werr != nil) {
		t.Fatalf("%s: MarshalJSON error %v, encoding/json's %v", what, err, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: MarshalJSON\n%s\nencoding/json\n%s", what, got, want)
	}
}

// oddStrings are strings encoding/json escapes or copies in some special way.
var oddStrings = []string{"", "agent:a", "human:alice@example.org", `quote"d`, `back\slash`, "<script>&amp;</script>", "a<b", "a>b", "a&b",
	"tab\there", "nul\x00", "\x1f\x7f", "é ü 漢字", "line\u2028sep\u2029", "bad\xffutf8", "\xed\xa0\x80", "emoji 🙂"}

var oddTimes = []time.Time{{}, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC), time.Date(2026, 5, 17, 9, 0, 0, 123456789, time.UTC),
	time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", -(3*3600+30*60))), time.Unix(1700000000, 0).In(time.FixedZone("X", 3600))}

func randomState(rng *rand.Rand) *State {
	pick := func() string { return oddStrings[rng.IntN(len(oddStrings))] }
	bytesOr := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		default:
			b := make([]byte, rng.IntN(70))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
	}
	s := &State{Keys: &Keyring{}}
	if rng.IntN(8) > 0 {
		s.Keys.Participants = map[string]*Participant{}
		for range rng.IntN(6) {
			uri := pick() + pick()
			if rng.IntN(10) == 0 {
				s.Keys.Participants[uri] = nil
				continue
			}
			p := &Participant{URI: uri, Role: pick()}
			if rng.IntN(5) > 0 {
				p.Keys = []Key{}
				for range rng.IntN(4) {
					p.Keys = append(p.Keys, Key{Kid: pick(), Public: bytesOr(), From: oddTimes[rng.IntN(len(oddTimes))],
						Until: oddTimes[rng.IntN(len(oddTimes))], Revoked: rng.IntN(2) == 0, AddedBy: pick()})
				}
			}
			s.Keys.Participants[uri] = p
		}
	}
	for range rng.IntN(3) {
		s.Keys.Pending = append(s.Keys.Pending, PendingCreate{Seq: rng.Uint64() >> rng.IntN(64), Sender: pick(), Kid: pick(), Message: bytesOr(), Value: bytesOr()})
	}
	if rng.IntN(2) == 0 {
		s.Own = OwnChain{Begun: rng.IntN(2) == 0, From: rng.Uint64N(3), Unchained: rng.Uint64N(3), Diverged: rng.IntN(2) == 0, Next: rng.Uint64N(3)}
		if rng.IntN(2) == 0 {
			s.Own.Head = ledger.NextLink([]byte(pick()), ledger.Genesis)
		}
	}
	return s
}

// TestStateJSONIsEncodingJSON holds MarshalJSON to encoding/json: over the key lifecycle's
// states step by step, random key histories of odd strings (escapes, HTML characters,
// invalid UTF-8, line separators), times (zero, nanoseconds, offsets, the first and last
// years) and byte strings (nil, empty), and states encoding/json refuses.
func TestStateJSONIsEncodingJSON(t *testing.T) {
	c := newKeysChain(t)
	for i, s := range lifecycle() {
		runSteps(t, &c, []step{s})
		sameJSON(t, "lifecycle step "+s.name, c.State.(*State))
		if i == 0 && len(c.State.(*State).Keys.Participants) == 0 {
			t.Fatal("the lifecycle's first step registers nobody")
		}
	}
	sameJSON(t, "empty", &State{Keys: NewKeyring()})
	sameJSON(t, "nil keys", &State{})
	rng := rand.New(rand.NewChaCha8([32]byte{'s', 't', 'a', 't', 'e'}))
	for range 3000 {
		sameJSON(t, "random state", randomState(rng))
	}
	// A year encoding/json cannot write: both refuse.
	bad := &State{Keys: &Keyring{Participants: map[string]*Participant{"a": {URI: "a", Keys: []Key{{From: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}}}}
	if _, err := bad.MarshalJSON(); err == nil {
		t.Fatal("a key from the year 10000 encodes")
	}
	sameJSON(t, "year 10000", bad)
}

func FuzzStateJSON(f *testing.F) {
	f.Add("human:alice", "admin", "a1", "participant.join", int64(1779008400), int64(0), []byte{1, 2, 3})
	f.Add("<&>\u2028", "\x00", "\xff", "", int64(-62135596800), int64(1), []byte(nil))
	f.Fuzz(func(t *testing.T, uri, role, kid, by string, sec, nsec int64, x []byte) {
		from := time.Unix(sec, nsec%1e9).UTC()
		s := &State{Keys: &Keyring{Participants: map[string]*Participant{uri: {URI: uri, Role: role,
			Keys: []Key{{Kid: kid, Public: x, From: from, Until: from.Add(time.Second), AddedBy: by}}}},
			Pending: []PendingCreate{{Seq: uint64(sec), Sender: role, Kid: kid, Message: x}}}}
		sameJSON(t, "fuzzed state", s)
	})
}

// BenchmarkStateMarshal encodes the key lifecycle's final state (four participants, seven
// keys), as every commit does; BenchmarkStateMarshalReflect is encoding/json's encoding.
func BenchmarkStateMarshal(b *testing.B) {
	s := lifecycleState(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStateMarshalReflect(b *testing.B) {
	s := lifecycleState(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reflected(s); err != nil {
			b.Fatal(err)
		}
	}
}

func lifecycleState(b *testing.B) *State {
	c, err := ledger.NewChain(ws, Adapter{})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range lifecycle() {
		rec := s.rec(b)
		if err := submit(&c, rec); (err == nil) != (s.want == "") {
			b.Fatalf("%s: %v", s.name, err)
		}
	}
	return c.State.(*State)
}
