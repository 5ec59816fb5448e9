package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/evident-log/evident/servicekey"
	"github.com/evident-log/evident/verifier"
	"github.com/veraison/go-cose"
)

// deployment is one distributed evidentd deployment: a fresh database on the test MariaDB,
// a fresh bucket on the test MinIO and one data directory holding the keys every replica
// shares. Its replicas run in this test process, each with its own HTTP server.
type deployment struct {
	dsn  string
	s3   testinfra.S3
	data string
}

// newDeployment creates the database, names the bucket (the first replica creates it) and
// creates every key evidentd would create at its first start, so that replicas started at
// the same moment share the keys instead of racing to create them.
func newDeployment(t *testing.T) *deployment {
	t.Helper()
	dep := &deployment{dsn: testinfra.MySQLDatabase(t), s3: testinfra.S3Server(t), data: testinfra.TempDir(t)}
	keys := filepath.Join(dep.data, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	_, vkey, err := log.LoadOrCreateKey(keys, DefaultOrigin)
	if err != nil {
		t.Fatal(err)
	}
	key, err := scitt.LoadOrCreateKey(filepath.Join(keys, "service.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scitt.OpenKeyRing(filepath.Join(keys, servicekey.HistoryFile), key.Public(), vkey, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := scitt.LoadOrCreateKey(filepath.Join(keys, cop.NodeKeyFile), nil); err != nil {
		t.Fatal(err)
	}
	return dep
}

// replica is one evidentd of a deployment, served over loopback HTTP.
type replica struct {
	d     *Daemon
	url   string
	close func() error // stops the server and the daemon; later calls return the first result
}

// open starts a replica with the SCRAPI configuration sc.
func (dep *deployment) open(t *testing.T, sc SCITT) *replica {
	t.Helper()
	r, err := dep.tryOpen(sc)
	if err != nil {
		t.Fatal(err)
	}
	r.closeAtCleanup(t)
	return r
}

// tryOpen is open without the testing.T, for replicas started from several goroutines.
func (dep *deployment) tryOpen(sc SCITT) (*replica, error) {
	d, err := Open(context.Background(), Config{Data: dep.data, CheckpointInterval: time.Second, SCITT: sc,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Distributed: &Distributed{DSN: dep.dsn, S3Endpoint: dep.s3.Endpoint, S3Bucket: dep.s3.Bucket,
			S3AccessKey: dep.s3.AccessKey, S3SecretKey: dep.s3.SecretKey, S3CreateBucket: true, MaxOpenConns: 8}})
	if err != nil {
		return nil, err
	}
	return serve(d), nil
}

// serve serves d over loopback HTTP.
func serve(d *Daemon) *replica {
	srv := httptest.NewServer(d.Handler())
	return &replica{d: d, url: srv.URL, close: sync.OnceValue(func() error {
		srv.Close()
		return d.Close()
	})}
}

// closeAtCleanup closes r when the test ends, if it is not closed by then.
func (r *replica) closeAtCleanup(t *testing.T) {
	t.Cleanup(func() {
		if err := r.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

// atOnce runs every call in its own goroutine, released together (testinfra.AtOnce).
func atOnce(calls ...func()) {
	testinfra.AtOnce(len(calls), func(i int) { calls[i]() })
}

// logEntries reads every entry the log's latest checkpoint covers, through the tile log.
func logEntries(t *testing.T, l *log.Log) [][32]byte {
	t.Helper()
	ctx := t.Context()
	size, err := l.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][32]byte, size)
	for i := range out {
		e, err := l.Entry(ctx, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = [32]byte(e)
	}
	return out
}

// checkEachOnce fails unless no entry appears twice in entries.
func checkEachOnce(t *testing.T, entries [][32]byte) {
	t.Helper()
	first := map[[32]byte]int{}
	for i, e := range entries {
		if j, ok := first[e]; ok {
			t.Errorf("log entry %x is at index %d and again at %d", e[:8], j, i)
			continue
		}
		first[e] = i
	}
}

// checkGenesis fails unless entry 0 is the log's genesis entry.
func checkGenesis(t *testing.T, entries [][32]byte) {
	t.Helper()
	if g := scitt.GenesisEntry(DefaultOrigin); len(entries) == 0 || entries[0] != g {
		t.Fatalf("log entry 0 is not the genesis entry %x (log of %d entries)", g[:8], len(entries))
	}
}

// send makes one HTTP request without following redirects; any goroutine may call it.
func send(ctx context.Context, method, url, contentType string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}, err
}

// registration is what a SCRAPI client got for one statement.
type registration struct {
	posted  int    // status of POST /entries: 201, or 202 when the receipt was fetched after
	receipt []byte // RFC 9942 receipt
}

// registerStatement registers statement at base over SCRAPI: the receipt is the 201's
// body, or after a 202 the body of GET Location once it answers 200.
func registerStatement(ctx context.Context, base string, statement []byte) (registration, error) {
	a, err := send(ctx, http.MethodPost, base+"/entries", server.COSEType, statement)
	if err != nil {
		return registration{}, err
	}
	switch a.code {
	case http.StatusCreated:
		return registration{a.code, a.body}, nil
	case http.StatusAccepted:
		rcpt, err := awaitReceipt(ctx, a.header.Get("Location"))
		return registration{a.code, rcpt}, err
	}
	return registration{}, fmt.Errorf("POST /entries: %d %x", a.code, a.body)
}

// awaitReceipt polls a SCRAPI registration's locator until it answers 200 with the receipt.
func awaitReceipt(ctx context.Context, loc string) ([]byte, error) {
	for {
		g, err := send(ctx, http.MethodGet, loc, "", nil)
		if err != nil {
			return nil, err
		}
		switch g.code {
		case http.StatusOK:
			return g.body, nil
		case http.StatusNoContent:
		default:
			return nil, fmt.Errorf("GET %s: %d %x", loc, g.code, g.body)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("GET %s: still pending: %w", loc, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestReplicasRegisterOnce: two replicas on one database and one bucket receive the same
// signed statement at the same instant — one answers 201 with the receipt, the other 202
// and then the receipt at its Location — for several statements at a time, over several
// rounds, each round also sending again a statement registered before. Every statement is
// one log entry, both replicas answer with the same receipt, and it verifies at that entry.
func TestReplicasRegisterOnce(t *testing.T) {
	const rounds, fresh = 3, 3
	dep := newDeployment(t)
	is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmEdDSA)
	policy := writePolicy(t, t.TempDir(), is)
	a := dep.open(t, SCITT{RegistrationPolicy: policy, RegistrationWait: 30 * time.Second})
	b := dep.open(t, SCITT{RegistrationPolicy: policy, RegistrationWait: -1}) // always 202
	replicas := []*replica{a, b}
	keys := serviceKeys(t, a.url)

	at := map[[32]byte]uint64{} // statement entry → log index its receipts name
	var registered [][]byte
	for round := range rounds {
		stmts := make([][]byte, 0, fresh+1)
		for i := range fresh {
			stmts = append(stmts, signSBOM(t, is, round*fresh+i))
		}
		if round > 0 {
			stmts = append(stmts, registered[(round-1)*fresh])
		}
		got := make([][]registration, len(stmts)) // statement → replica → answer
		errs := make([]error, len(stmts)*len(replicas))
		var calls []func()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		for i, st := range stmts {
			got[i] = make([]registration, len(replicas))
			for j, r := range replicas {
				calls = append(calls, func() { got[i][j], errs[i*len(replicas)+j] = registerStatement(ctx, r.url, st) })
			}
		}
		atOnce(calls...)
		cancel()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, st := range stmts {
			entry, _ := receipts.EntryHash(st)
			if got[i][0].posted != http.StatusCreated || got[i][1].posted != http.StatusAccepted {
				t.Errorf("round %d, statement %d: POST answered %d and %d, want 201 and 202", round, i, got[i][0].posted, got[i][1].posted)
			}
			if !bytes.Equal(got[i][0].receipt, got[i][1].receipt) {
				t.Errorf("round %d, statement %d: the replicas answered different receipts", round, i)
			}
			idx := testinfra.VerifyReceipt(t, keys, st, got[i][0].receipt).Inclusion[0].LeafIndex
			if prev, ok := at[entry]; ok && prev != idx {
				t.Errorf("round %d, statement %d: registered again at %d, first at %d", round, i, idx, prev)
			}
			at[entry] = idx
		}
		registered = append(registered, stmts[:fresh]...)
	}

	b.close() // its registrar's background work ends: nothing more can reach the log
	entries := logEntries(t, a.d.Log())
	checkGenesis(t, entries)
	checkEachOnce(t, entries)
	// Genesis, the policy statement and every statement once.
	if want := 2 + rounds*fresh; len(entries) != want {
		t.Errorf("log of %d entries, want %d", len(entries), want)
	}
	for entry, idx := range at {
		if idx >= uint64(len(entries)) || entries[idx] != entry {
			t.Errorf("log entry %d is not the statement %x its receipt names", idx, entry[:8])
		}
	}
}

// TestReplicasSealOnce: two replicas on one database and one bucket are asked to seal the
// same chain at the same instant, round after round with new entries (through either
// replica) in between. Both answer the same seal number, log index and receipt; every seal
// statement is one log entry; the bundle either replica exports verifies offline.
func TestReplicasSealOnce(t *testing.T) {
	const ws, rounds, perRound = "wsp_replicas", 4, 2
	dep := newDeployment(t)
	a, b := dep.open(t, SCITT{}), dep.open(t, SCITT{})
	replicas := []*replica{a, b}
	recs := chainRecords(t, ws, rounds*perRound)
	keys := serviceKeys(t, a.url)

	for round := range rounds {
		for i := range perRound {
			n := round*perRound + i
			if code, body := post(t, replicas[n%2].url+"/v1/chains/"+ws+"/entries", api.MediaJSON, recs[n]); code != http.StatusCreated {
				t.Fatalf("entry %d: %d %s", n, code, body)
			}
		}
		got := make([]answer, len(replicas))
		errs := make([]error, len(replicas))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		atOnce(func() { got[0], errs[0] = send(ctx, http.MethodPost, a.url+"/v1/chains/"+ws+"/seal", "", nil) },
			func() { got[1], errs[1] = send(ctx, http.MethodPost, b.url+"/v1/chains/"+ws+"/seal", "", nil) })
		cancel()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// One replica made the seal (201); the other answered it again (200), as a resend.
		seals := make([]api.SealResponse, len(replicas))
		created := 0
		for j, g := range got {
			if (g.code != http.StatusCreated && g.code != http.StatusOK) || json.Unmarshal(g.body, &seals[j]) != nil {
				t.Fatalf("round %d, replica %d: seal answered %d %s", round, j, g.code, g.body)
			}
			if g.code == http.StatusCreated {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("round %d: %d replicas answered 201 Created, want one (the other 200: the same seal)", round, created)
		}
		if seals[0].N != uint64(round) || seals[1].N != seals[0].N || seals[1].LogIndex != seals[0].LogIndex || seals[1].Receipt != seals[0].Receipt {
			t.Fatalf("round %d: the replicas answered seal %d at %d and seal %d at %d (receipts equal: %t); want seal %d, one index, one receipt",
				round, seals[0].N, seals[0].LogIndex, seals[1].N, seals[1].LogIndex, seals[0].Receipt == seals[1].Receipt, round)
		}
		if s := seals[0].Seal.Size; s != uint64((round+1)*perRound) {
			t.Fatalf("round %d: seal of size %d, want %d", round, s, (round+1)*perRound)
		}
		stmt, rcpts, err := receipts.SplitTransparent(mustBase64(t, seals[0].Transparent))
		if err != nil || len(rcpts) != 1 {
			t.Fatalf("round %d: transparent statement: %v (%d receipts)", round, err, len(rcpts))
		}
		if idx := testinfra.VerifyReceipt(t, keys, stmt, rcpts[0]).Inclusion[0].LeafIndex; idx != seals[0].LogIndex {
			t.Fatalf("round %d: receipt names log index %d, the seal %d", round, idx, seals[0].LogIndex)
		}
	}
	for _, r := range replicas {
		if rep := exportAndVerify(t, r.url, ws); rep.Verdict != verifier.Verified {
			var buf bytes.Buffer
			rep.WriteText(&buf)
			t.Fatalf("bundle exported by %s: %s\n%s", r.url, rep.Verdict, buf.String())
		}
	}

	b.close()
	entries := logEntries(t, a.d.Log())
	checkGenesis(t, entries)
	checkEachOnce(t, entries)
	if want := 1 + rounds; len(entries) != want {
		t.Errorf("log of %d entries, want %d: genesis and one per seal", len(entries), want)
	}
	for _, s := range chainSeals(t, a.url, ws) {
		if !s.Registered || s.LogIndex >= uint64(len(entries)) || "sha256:"+hexs(entries[s.LogIndex][:]) != s.Entry {
			t.Errorf("seal %d (%s) is not the log's entry %d", s.N, s.Entry, s.LogIndex)
		}
	}
}

// TestReplicasGenesisOnce: replicas started at the same instant on an empty database and
// bucket, then sealing chains at the same instant (each replica appends the genesis entry
// before its first statement): the genesis entry is in the log once, at index 0.
func TestReplicasGenesisOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		chains   []int // how many new chains each replica is asked to seal, all at once
	}{
		{"two replicas, one seal", 2, []int{1, 0}},
		{"two replicas, a seal each", 2, []int{1, 1}},
		{"three replicas, three seals each", 3, []int{3, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep := newDeployment(t)
			replicas := make([]*replica, tc.replicas)
			errs := make([]error, tc.replicas)
			var opens []func()
			for i := range replicas {
				opens = append(opens, func() { replicas[i], errs[i] = dep.tryOpen(SCITT{}) })
			}
			atOnce(opens...)
			for _, r := range replicas {
				if r != nil {
					r.closeAtCleanup(t)
				}
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("starting replicas at once: %v", err)
			}
			var urls []string
			for i, n := range tc.chains {
				for k := range n {
					ws := fmt.Sprintf("wsp_genesis_%d_%d", i, k)
					if code, body := post(t, replicas[i].url+"/v1/chains/"+ws+"/entries", api.MediaJSON, chainRecords(t, ws, 1)[0]); code != http.StatusCreated {
						t.Fatalf("entry: %d %s", code, body)
					}
					urls = append(urls, replicas[i].url+"/v1/chains/"+ws+"/seal")
				}
			}
			sealErrs := make([]error, len(urls))
			seals := make([]func(), len(urls))
			for i, url := range urls {
				seals[i] = func() { sealErrs[i] = sealOnce(t.Context(), url) }
			}
			atOnce(seals...)
			if err := errors.Join(sealErrs...); err != nil {
				t.Fatal(err)
			}
			for _, r := range replicas[1:] {
				r.close()
			}
			entries := logEntries(t, replicas[0].d.Log())
			checkGenesis(t, entries)
			checkEachOnce(t, entries)
			if len(entries) != 1+len(urls) {
				t.Errorf("log of %d entries, want %d: genesis and one per seal", len(entries), 1+len(urls))
			}
		})
	}
}

// mustBase64 decodes standard base64.
func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sealOnce posts a seal request to url and wants 201.
func sealOnce(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	a, err := send(ctx, http.MethodPost, url, "", nil)
	if err == nil && a.code != http.StatusCreated {
		err = fmt.Errorf("POST %s: %d %s", url, a.code, a.body)
	}
	return err
}

// chainRecords returns the first n signed records of a CHAP chain ws.
func chainRecords(t *testing.T, ws string, n int) [][]byte {
	t.Helper()
	bl, err := chapscenario.Long(ws, n, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	return bl.Records()[:n]
}

// chainSeals lists a chain's seals over HTTP.
func chainSeals(t *testing.T, base, ws string) []api.SealView {
	t.Helper()
	code, body := get(t, base+"/v1/chains/"+ws+"/seals")
	var page api.SealsPage
	if err := json.Unmarshal(body, &page); code != http.StatusOK || err != nil {
		t.Fatalf("seals of %s: %d %s", ws, code, body)
	}
	return page.Seals
}

// signSBOM returns the i-th statement of the test issuer: an SPDX document.
func signSBOM(t *testing.T, is *regpolicytest.Issuer, i int) []byte {
	t.Helper()
	return is.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3","name":"app-`+strconv.Itoa(i)+`"}`),
		regpolicytest.Options{Subject: "pkg:oci/app@" + strconv.Itoa(i), ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()})
}
