package server_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veraison/go-cose"

	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/evident-log/evident/servicekey"
)

// TestReceiptAfterRotation: a statement is registered, the service key is rotated (`evident
// keys rotate`) and evidentd restarted. Every answer that carries the statement's receipt —
// GET /entries/{id}, the transparent statement of GET /entries/{id}/statement, a second
// POST /entries of the same statement — carries one signed with the CURRENT key, which
// verifies with the service's published key set (as `evident receipt verify --key
// scitt-keys.cbor` checks it) and whose signing time lies in the current key's window of
// the key history. The receipt handed out before the rotation still verifies with the
// retired key, which the key set and the history keep.
func TestReceiptAfterRotation(t *testing.T) {
	data, dir := newData(t), t.TempDir()
	is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmEdDSA)
	policy := writePolicy(t, dir, is)
	stmt := is.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3"}`), regpolicytest.Options{Subject: "pkg:app", ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()})

	e := startEvidentd(t, data, 100*time.Millisecond, 10*time.Second, policy)
	a := do(t, plain, http.MethodPost, e.base+"/entries", server.COSEType, stmt)
	if a.code != http.StatusCreated {
		t.Fatalf("POST /entries: %d %q", a.code, a.body)
	}
	id := strings.TrimPrefix(a.header.Get("Location"), e.base+"/entries/")
	before := a.body
	oldReceipt := testinfra.VerifyReceipt(t, serviceKeys(t, e.base), stmt, before)
	e.stop()

	oldKID, newKID, err := servicekey.Rotate(filepath.Join(data, "keys", "service.key"), nil, servicekey.TypeP256, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(oldReceipt.KeyID) != oldKID {
		t.Fatalf("the receipt before the rotation names kid %x, the rotated key is %s", oldReceipt.KeyID, oldKID)
	}
	hist, err := servicekey.ReadHistory(filepath.Join(data, "keys", servicekey.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}

	e = startEvidentd(t, data, 100*time.Millisecond, 10*time.Second, policy)
	keys := serviceKeys(t, e.base) // the transparency service's keys now: both, the retired one kept
	if len(keys) != 2 {
		t.Fatalf("/.well-known/scitt-keys holds %d keys after the rotation, want 2", len(keys))
	}
	// The receipt handed out before the rotation keeps verifying, with the retired key.
	testinfra.VerifyReceipt(t, keys, stmt, before)

	var served [][]byte
	for _, tc := range []struct {
		name    string
		receipt func(t *testing.T) []byte
	}{
		{"GET /entries/{id}", func(t *testing.T) []byte {
			g := do(t, plain, http.MethodGet, e.base+"/entries/"+id, "", nil)
			if g.code != http.StatusOK || g.header.Get("Content-Type") != server.COSEType {
				t.Fatalf("%d %s", g.code, g.header.Get("Content-Type"))
			}
			return g.body
		}},
		{"GET /entries/{id} again", func(t *testing.T) []byte {
			return do(t, plain, http.MethodGet, e.base+"/entries/"+id, "", nil).body
		}},
		{"GET /entries/{id}/statement", func(t *testing.T) []byte {
			g := do(t, plain, http.MethodGet, e.base+"/entries/"+id+"/statement", "", nil)
			if g.code != http.StatusOK {
				t.Fatalf("%d %q", g.code, g.body)
			}
			st, rcpts, err := receipts.SplitTransparent(g.body)
			if err != nil || len(rcpts) == 0 {
				t.Fatalf("transparent statement: %d receipts, %v", len(rcpts), err)
			}
			if e1, _ := receipts.EntryHash(st); e1 != mustEntry(t, stmt) {
				t.Fatal("the transparent statement is not the registered statement")
			}
			return rcpts[0]
		}},
		{"POST /entries again", func(t *testing.T) []byte {
			p := do(t, plain, http.MethodPost, e.base+"/entries", server.COSEType, stmt)
			if p.code != http.StatusCreated {
				t.Fatalf("%d %q", p.code, p.body)
			}
			return p.body
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcpt := tc.receipt(t)
			r := testinfra.VerifyReceipt(t, keys, stmt, rcpt)
			if got := hex.EncodeToString(r.KeyID); got != newKID {
				t.Fatalf("receipt signed by kid %s, want the current key %s (retired: %s)", got, newKID, oldKID)
			}
			k, ok := hist.Lookup(r.KeyID)
			if !ok || !k.ValidAt(time.Unix(r.Claims.IssuedAt, 0)) {
				t.Errorf("receipt signed at %d, outside the current key's window %s..%s", r.Claims.IssuedAt, k.NotBefore, k.NotAfter)
			}
			if r.Inclusion[0].LeafIndex != oldReceipt.Inclusion[0].LeafIndex {
				t.Errorf("leaf %d, the registration's is %d", r.Inclusion[0].LeafIndex, oldReceipt.Inclusion[0].LeafIndex)
			}
			served = append(served, rcpt)
		})
	}
	// GET /entries/{id} serves the same bytes each time (one receipt per registration,
	// cached), and the POST of the same statement the same as the GET.
	if len(served) == 4 && (!bytes.Equal(served[0], served[1]) || !bytes.Equal(served[0], served[3])) {
		t.Error("the receipt under the current key differs from one answer to the next")
	}
}

func mustEntry(t *testing.T, statement []byte) [32]byte {
	t.Helper()
	e, err := receipts.EntryHash(statement)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
