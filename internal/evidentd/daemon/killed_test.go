package daemon

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/veraison/go-cose"
)

// errKilled is what a killed replica's registration returns in these tests.
var errKilled = errors.New("replica killed while appending")

// killedAppend does what a replica killed in the middle of an append leaves behind: a
// claim on entry (owner "killed-replica") whose lease is over at once and, when appended,
// the entry in the log at the returned index, recorded nowhere.
func killedAppend(ctx context.Context, claims store.Claims, l *log.Log, entry [32]byte, appended bool) (uint64, error) {
	size, err := l.Size(ctx)
	if err != nil {
		return 0, err
	}
	c, err := claims.ClaimEntry(ctx, entry, "killed-replica#1", time.Millisecond, size)
	if err != nil || !c.Held {
		return 0, fmt.Errorf("claim of the replica to be killed: %+v, %v", c, err)
	}
	if !appended {
		return 0, nil
	}
	idx, _, err := l.Append(ctx, entry[:])
	return idx, err
}

// killedSealer is the sealer of a replica killed while registering a seal: it signs the
// seal statement with the service, then leaves what killedAppend leaves and fails.
type killedSealer struct {
	*scitt.Service
	claims   store.Claims
	appended bool
	index    uint64 // where it appended the statement, when appended
}

// Register implements ingest.SealIssuer.
func (k *killedSealer) Register(ctx context.Context, statement []byte) (uint64, []byte, []byte, error) {
	entry, err := receipts.EntryHash(statement)
	if err != nil {
		return 0, nil, nil, err
	}
	if k.index, err = killedAppend(ctx, k.claims, k.Log(), entry, k.appended); err != nil {
		return 0, nil, nil, err
	}
	return 0, nil, nil, errKilled
}

// TestReplicasTakeOverKilled: a replica was killed while appending a seal statement or a
// SCRAPI statement — after claiming it and appending it, or after claiming it only — and
// is gone. A client asking the live replica again, or a replica starting (which finishes
// what is pending), takes the expired claim over and finishes it: the statement is one
// log entry, at the index the killed replica appended it at when it did. (Here Tessera's
// MySQL antispam, which indexes the log about once a second, may also know the entry;
// TestRestartFindsKilledAppend isolates the search of the log.)
func TestReplicasTakeOverKilled(t *testing.T) {
	dep := newDeployment(t)
	is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmEdDSA)
	live := dep.open(t, SCITT{RegistrationPolicy: writePolicy(t, t.TempDir(), is), RegistrationWait: 30 * time.Second})
	keys := serviceKeys(t, live.url)
	for i, tc := range []struct {
		name     string
		seal     bool // a seal statement, else a SCRAPI statement
		appended bool // the killed replica appended the entry before it died
		restart  bool // a replica starts and finishes it, else a client asks the live replica again
	}{
		{"seal appended, client asks again", true, true, false},
		{"seal claimed only, client asks again", true, false, false},
		{"seal appended, replica starts", true, true, true},
		{"seal claimed only, replica starts", true, false, true},
		{"statement appended, client asks again", false, true, false},
		{"statement claimed only, client asks again", false, false, false},
		{"statement appended, replica starts", false, true, true},
		{"statement claimed only, replica starts", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var entry [32]byte
			var killedAt, finishedAt uint64
			killed := dep.open(t, SCITT{})
			if tc.seal {
				entry, killedAt = killSeal(t, killed, fmt.Sprintf("wsp_killed_%d", i), tc.appended)
				finishedAt = finishSeal(t, dep, live, fmt.Sprintf("wsp_killed_%d", i), tc.restart)
			} else {
				stmt := signSBOM(t, is, 1000+i)
				_, policyID := live.d.Registrar().Policy()
				entry, killedAt = killRegistration(t, killed, is.ISS, policyID, stmt, tc.appended)
				rcpt := finishRegistration(t, dep, live, stmt, tc.restart)
				finishedAt = testinfra.VerifyReceipt(t, keys, stmt, rcpt).Inclusion[0].LeafIndex
			}
			if tc.appended && finishedAt != killedAt {
				t.Errorf("finished at log index %d, but the killed replica appended it at %d", finishedAt, killedAt)
			}
			entries := logEntries(t, live.d.Log())
			checkEachOnce(t, entries)
			if finishedAt >= uint64(len(entries)) || entries[finishedAt] != entry {
				t.Errorf("log entry %d is not the statement %x", finishedAt, entry[:8])
			}
		})
	}
}

// killSeal seals a new chain ws through the real pipeline on the store of replica killed,
// with a sealer killed while registering the seal, and closes that replica: the seal stays
// pending. It returns the seal statement's entry and, when appended, where the killed
// sealer appended it.
func killSeal(t *testing.T, killed *replica, ws string, appended bool) ([32]byte, uint64) {
	t.Helper()
	if code, body := post(t, killed.url+"/v1/chains/"+ws+"/entries", api.MediaJSON, chainRecords(t, ws, 1)[0]); code != http.StatusCreated {
		t.Fatalf("entry: %d %s", code, body)
	}
	sealer := &killedSealer{Service: killed.d.service, claims: killed.d.store.(store.Claims), appended: appended}
	p, err := ingest.New(ingest.Options{Store: killed.d.store, Profiles: profile.All(), Sealer: sealer, Shared: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Seal(t.Context(), ws, false); !errors.Is(err, errKilled) {
		t.Fatalf("seal through the killed sealer: %v, want %v", err, errKilled)
	}
	seals := chainSeals(t, killed.url, ws)
	if len(seals) != 1 || seals[0].Registered {
		t.Fatalf("seals %+v, want one pending", seals)
	}
	entry, err := hexEntry(seals[0].Entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.close(); err != nil {
		t.Fatal(err)
	}
	return entry, sealer.index
}

// finishSeal finishes chain ws's pending seal — through a client asking live to seal it
// again, or through a replica that starts — and returns the seal's log index.
func finishSeal(t *testing.T, dep *deployment, live *replica, ws string, restart bool) uint64 {
	t.Helper()
	if !restart {
		code, body := post(t, live.url+"/v1/chains/"+ws+"/seal", "", nil)
		var s api.SealResponse
		// The seal the killed replica made is finished, not made: 200, as a resend.
		if err := json.Unmarshal(body, &s); code != http.StatusOK || err != nil || s.N != 0 {
			t.Fatalf("seal again: %d %s; want 200 with seal 0", code, body)
		}
		return s.LogIndex
	}
	started := dep.open(t, SCITT{}) // Open finishes the pending seals before it returns
	seals := chainSeals(t, started.url, ws)
	if len(seals) != 1 || !seals[0].Registered {
		t.Fatalf("seals after a replica started: %+v, want one registered", seals)
	}
	if err := started.close(); err != nil {
		t.Fatal(err)
	}
	return seals[0].LogIndex
}

// killRegistration leaves what replica killed, killed while registering statement, leaves
// — the pending registration (checked against policy policyID), an expired claim and,
// when appended, the entry in the log — and closes that replica.
func killRegistration(t *testing.T, killed *replica, issuer, policyID string, statement []byte, appended bool) ([32]byte, uint64) {
	t.Helper()
	entry, err := receipts.EntryHash(statement)
	if err != nil {
		t.Fatal(err)
	}
	reg := &store.Registration{ID: hexs(entry[:]), Kind: store.KindStatement, Statement: statement, Issuer: issuer,
		Subject: "pkg:oci/app", PolicyID: policyID, Received: time.Now()}
	if _, created, err := killed.d.store.(store.Registrations).AddRegistration(t.Context(), reg); err != nil || !created {
		t.Fatalf("pending registration: created %t, %v", created, err)
	}
	idx, err := killedAppend(t.Context(), killed.d.store.(store.Claims), killed.d.Log(), entry, appended)
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.close(); err != nil {
		t.Fatal(err)
	}
	return entry, idx
}

// finishRegistration finishes a pending registration — through a client sending the
// statement to live again, or through a replica that starts and picks it up — and
// returns its receipt.
func finishRegistration(t *testing.T, dep *deployment, live *replica, statement []byte, restart bool) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if !restart {
		r, err := registerStatement(ctx, live.url, statement)
		if err != nil {
			t.Fatal(err)
		}
		return r.receipt
	}
	started := dep.open(t, SCITT{}) // its registrar starts the pending registrations
	entry, _ := receipts.EntryHash(statement)
	rcpt, err := awaitReceipt(ctx, started.url+"/entries/"+hexs(entry[:]))
	if err != nil {
		t.Fatal(err)
	}
	if err := started.close(); err != nil {
		t.Fatal(err)
	}
	return rcpt
}

// hexEntry parses a seal's "sha256:<hex>" entry.
func hexEntry(s string) ([32]byte, error) {
	var e [32]byte
	b, err := hex.DecodeString(strings.TrimPrefix(s, "sha256:"))
	if err != nil || len(b) != 32 {
		return e, fmt.Errorf("seal entry %q: %v", s, err)
	}
	return [32]byte(b), nil
}

// TestRestartFindsKilledAppend: evidentd on its embedded store was killed after appending
// a seal statement or a SCRAPI statement and before recording where. Its next start
// finishes the pending seal or registration at that index and appends nothing. The
// restarted log's deduplication is in memory and has forgotten the entry, so only the
// expired claim's search of the log keeps the statement from a second copy.
func TestRestartFindsKilledAppend(t *testing.T) {
	for _, seal := range []bool{true, false} {
		t.Run(map[bool]string{true: "seal", false: "statement"}[seal], func(t *testing.T) {
			dir := t.TempDir()
			is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmEdDSA)
			policy := writePolicy(t, t.TempDir(), is)
			d1, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
				SCITT: SCITT{RegistrationPolicy: policy}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			killed := serve(d1)
			killed.closeAtCleanup(t)
			const ws = "wsp_killed"
			stmt := signSBOM(t, is, 1)
			var entry [32]byte
			var killedAt uint64
			if seal {
				entry, killedAt = killSeal(t, killed, ws, true)
			} else {
				_, policyID := killed.d.Registrar().Policy()
				entry, killedAt = killRegistration(t, killed, is.ISS, policyID, stmt, true)
			}

			d, srv := startSCITT(t, dir, 100*time.Millisecond, 10*time.Second, policy)
			var finishedAt uint64
			if seal {
				seals := chainSeals(t, srv.URL, ws)
				if len(seals) != 1 || !seals[0].Registered {
					t.Fatalf("seals after the restart: %+v, want one registered", seals)
				}
				finishedAt = seals[0].LogIndex
			} else {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				rcpt, err := awaitReceipt(ctx, srv.URL+"/entries/"+hexs(entry[:]))
				if err != nil {
					t.Fatal(err)
				}
				finishedAt = testinfra.VerifyReceipt(t, serviceKeys(t, srv.URL), stmt, rcpt).Inclusion[0].LeafIndex
			}
			if finishedAt != killedAt {
				t.Errorf("finished at log index %d, but the killed process appended it at %d", finishedAt, killedAt)
			}
			entries := logEntries(t, d.Log())
			checkEachOnce(t, entries)
			if killedAt >= uint64(len(entries)) || entries[killedAt] != entry {
				t.Errorf("log entry %d is not the statement %x", killedAt, entry[:8])
			}
		})
	}
}
