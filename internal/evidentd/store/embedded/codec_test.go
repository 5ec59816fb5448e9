package embedded

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
		got, err := decodeEntry(e.Chain, e.Seq, encodeEntry(&e, store.IndexedAttrs(e.Attrs)))
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

// TestValuesReadByAnotherDecoder: a value the store writes is plain CBOR that an independent
// decoder (Python's cbor2, as Debian packages it) reads field by field, as docs/operations.md
// says: here an entry with a non-ASCII record, a timestamp, metadata and attributes.
func TestValuesReadByAnotherDecoder(t *testing.T) {
	const py = "/usr/bin/python3" // Debian's, with its python3-* packages
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if out, err := exec.Command(py, "-c", "import cbor2").CombinedOutput(); err != nil {
		t.Skipf("python3 has no cbor2 (Debian python3-cbor2): %s", out)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	e := store.Entry{Chain: "c", Seq: 3, Prev: ledger.Link{3}, Link: ledger.Link{4}, Arrival: at, Record: []byte(`{"who":"爱丽丝"}`), RecordID: "id-3",
		Method: "task.update", Sender: "human:алиса", TS: at.Add(time.Second), Signed: true, Meta: []byte(`{"seq":3}`),
		Attrs: map[string][]string{"task_id": {"t2", "t1"}}}
	file := filepath.Join(t.TempDir(), "entry.cbor")
	if err := os.WriteFile(file, encodeEntry(&e, store.IndexedAttrs(e.Attrs)), 0o600); err != nil {
		t.Fatal(err)
	}
	const script = `
import cbor2, json, sys
v = cbor2.load(open(sys.argv[1], "rb"))
prev, link, arrival, record, rid, method, sender, ts, signed, meta, attrs = v
print(json.dumps({"prev": prev.hex(), "link": link.hex(), "arrival": arrival, "record": record.decode("utf-8"), "rid": rid,
	"method": method, "sender": sender, "ts": ts, "signed": signed, "meta": meta.decode(), "attrs": attrs}, ensure_ascii=False))
`
	out, err := exec.Command(py, "-c", script, file).Output()
	if err != nil {
		t.Fatalf("cbor2: %v", err)
	}
	var got struct {
		Prev, Link           string
		Arrival, TS          int64
		Record, RID          string
		Method, Sender, Meta string
		Signed               bool
		Attrs                map[string][]string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Prev != hex.EncodeToString(e.Prev[:]) || got.Link != hex.EncodeToString(e.Link[:]) || got.Arrival != at.UnixMilli() ||
		got.Record != string(e.Record) || got.RID != e.RecordID || got.Method != e.Method || got.Sender != e.Sender ||
		got.TS != e.TS.UnixMilli() || !got.Signed || got.Meta != string(e.Meta) || !reflect.DeepEqual(got.Attrs, map[string][]string{"task_id": {"t1", "t2"}}) {
		t.Fatalf("cbor2 read %+v from %+v", got, e)
	}
}
