package embedded

import (
	"reflect"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// TestCodecRoundTrip: every value the store writes decodes to what was written.
func TestCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	c := &store.ChainRecord{ID: "wsp_ü", Profile: "chap/0.3", Size: 7, Head: ledger.Link{1, 2}, Tree: []byte(`{"r":1}`), State: []byte(`{}`),
		Closed: true, LastSeal: "sha256:00", SealedSize: 5, Created: at.Add(123 * time.Nanosecond)}
	got, err := decodeChain(c.ID, encodeChain(c))
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("chain: %+v %v, want %+v", got, err, c)
	}
	for _, e := range []store.Entry{
		{Chain: "c", Seq: 3, Prev: ledger.Link{3}, Link: ledger.Link{4}, Arrival: at, Record: []byte(`{"a":"é"}`), RecordID: "id-3", Method: "m", Sender: "s",
			TS: at.Add(time.Second), Signed: true, Meta: []byte(`{"seq":3}`), Attrs: map[string][]string{"task_id": {"t1", "t2"}}},
		{Chain: "c", Seq: 4, Arrival: at, Record: []byte(`{}`), Meta: []byte{}}, // no ts, no id, empty (not absent) meta
	} {
		got, err := decodeEntry(e.Chain, e.Seq, encodeEntry(&e, indexedAttrs(e.Attrs)))
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Fatalf("entry: %+v %v, want %+v", got, err, e)
		}
	}
	sl := store.Seal{Chain: "c", N: 2, Size: 9, Closed: true, Statement: []byte{0xd2}, EntryHash: [32]byte{9}, SealedAt: at, Registered: true, LogIndex: 77,
		Checkpoint: []byte("cp"), Receipt: []byte{0xd2, 1}}
	if got, err := decodeSeal(sl.Chain, sl.N, encodeSeal(&sl)); err != nil || !reflect.DeepEqual(got, sl) {
		t.Fatalf("seal: %+v %v, want %+v", got, err, sl)
	}
	r := &store.Registration{ID: "ab", Kind: store.KindStatement, Statement: []byte{1}, Issuer: "iss", Subject: "sub", PolicyID: "p", Received: at}
	if got, seq, err := decodeReg(r.ID, encodeReg(r, 12)); err != nil || seq != 12 || !reflect.DeepEqual(got, r) {
		t.Fatalf("registration: %+v %d %v, want %+v", got, seq, err, r)
	}
}

// FuzzDecodeValues: no bytes make a decoder panic, and whatever decodes as an entry encodes
// back to a value that decodes the same.
func FuzzDecodeValues(f *testing.F) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	e := store.Entry{Chain: "c", Seq: 1, Arrival: at, Record: []byte(`{"a":1}`), RecordID: "r", TS: at, Meta: []byte("m"), Attrs: map[string][]string{"n": {"v"}}}
	f.Add(encodeEntry(&e, e.Attrs))
	f.Add(encodeChain(&store.ChainRecord{ID: "c", Size: 1, Created: at}))
	f.Add(encodeSeal(&store.Seal{Chain: "c", SealedAt: at}))
	f.Add(encodeReg(&store.Registration{ID: "i", Kind: store.KindPolicy, Received: at}, 1))
	f.Add(encode(&claimV{Owner: "o", Until: 1}))
	f.Add([]byte{0x9f, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeChain("c", b)
		decodeSeal("c", 0, b)
		decodeReg("i", b)
		var cv claimV
		decode(b, &cv)
		var fv forkV
		decode(b, &fv)
		e, err := decodeEntry("c", 0, b)
		if err != nil {
			return
		}
		again, err := decodeEntry("c", 0, encodeEntry(&e, e.Attrs))
		if err != nil {
			t.Fatalf("re-encoded entry: %v", err)
		}
		if !reflect.DeepEqual(again.Record, e.Record) || again.Link != e.Link || again.RecordID != e.RecordID || !again.Arrival.Equal(e.Arrival) {
			t.Fatalf("re-encoded entry differs: %+v, was %+v", again, e)
		}
	})
}
