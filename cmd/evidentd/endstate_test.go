package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// checkEndState checks what the scenarios left behind, through both replicas.
func checkEndState(t *testing.T, c *cluster, a *answers) {
	ctx := t.Context()
	trust := fetchTrust(t, "http://"+c.addrs[0])
	if other := fetchTrust(t, "http://"+c.addrs[1]); !reflect.DeepEqual(trust, other) {
		t.Fatalf("the replicas publish different trust files:\n%+v\n%+v", trust, other)
	}
	chains := listedChains(t, c, a)
	// Every chain is sealed through one replica, then closed (a second seal) through the
	// other: the log grows past one full tile, and every export carries seals by both.
	if err := sealAll(ctx, c, a, chains, 0, ""); err != nil {
		t.Errorf("sealing every chain: %v", err)
	}
	if err := sealAll(ctx, c, a, chains, 1, "?close=true"); err != nil {
		t.Errorf("closing every chain: %v", err)
	}
	t.Run("envelopes", func(t *testing.T) {
		// Every chain's export verifies offline, pinned to the service's trust file, and
		// holds every acknowledged envelope exactly once, at its seq.
		err := inParallel(len(chains), 4, func(k int) error {
			return checkExport(ctx, c, k%2, chains[k], trust, a.acked(chains[k]))
		})
		if err != nil {
			t.Error(err)
		}
	})
	t.Run("seals", func(t *testing.T) {
		for i := range 2 {
			if err := checkSeals(ctx, c, i, chains, trust, a); err != nil {
				t.Errorf("through replica %d: %v", i, err)
			}
		}
	})
	t.Run("fsck", func(t *testing.T) {
		for i := range 2 {
			entries, err := logEntries(ctx, c, i, trust)
			if err != nil {
				t.Fatal(err)
			}
			if err := fsckLog(ctx, c, i, trust, uint64(len(entries))); err != nil {
				t.Errorf("Tessera's fsck through replica %d: %v", i, err)
			}
		}
	})
}

// sealAll seals every chain, the k-th through replica (first+k)%2 (failing over when it is
// down), with the seal request's query (e.g. "?close=true"), and records the answers. A seal
// not answered 201 is an error, as is an answer that contradicts an earlier one for the same
// seal.
func sealAll(ctx context.Context, c *cluster, a *answers, chains []string, first int, query string) error {
	return inParallel(len(chains), 100, func(k int) error {
		ans, _, err := c.failover(ctx, (first+k)%2, http.MethodPost, "/v1/chains/"+chains[k]+"/seal"+query, "", nil)
		// A chain a scenario already sealed at its size has its seal answered again (200);
		// closing always makes a new seal (201).
		if err == nil && ans.status != http.StatusCreated && (query != "" || ans.status != http.StatusOK) {
			err = errors.New(ans.String())
		}
		if err != nil {
			return fmt.Errorf("seal %s: %w", chains[k], err)
		}
		_, err = a.sealed(chains[k], ans.body)
		return err
	})
}

// listedChains is the chains both replicas list, which must be the same and hold every
// chain with acknowledged envelopes.
func listedChains(t *testing.T, c *cluster, a *answers) []string {
	t.Helper()
	var lists [2][]string
	for i := range 2 {
		cs, err := c.chains(t.Context(), i)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cs {
			lists[i] = append(lists[i], s.Chain)
		}
	}
	if !reflect.DeepEqual(lists[0], lists[1]) {
		t.Fatalf("the replicas list different chains:\n%v\n%v", lists[0], lists[1])
	}
	listed := map[string]bool{}
	for _, id := range lists[0] {
		listed[id] = true
	}
	for _, id := range a.ackedChains() {
		if !listed[id] {
			t.Errorf("chain %s has acknowledged envelopes but is not listed", id)
		}
	}
	return lists[0]
}

// checkExport exports chain through replica i, verifies the bundle offline pinned to trust,
// and checks that it holds every envelope of acked (id → seq) exactly once, at its seq, and
// no envelope twice.
func checkExport(ctx context.Context, c *cluster, i int, chain string, trust *trustfile.File, acked map[string]uint64) error {
	ans, err := c.do(ctx, i, http.MethodGet, "/v1/export?chain="+url.QueryEscape(chain), "", nil)
	if err != nil || ans.status != http.StatusOK {
		return fmt.Errorf("export %s through replica %d: %v %v", chain, i, ans.status, err)
	}
	r, err := bundle.OpenZipBytes(ans.body)
	if err != nil {
		return fmt.Errorf("export %s: %w", chain, err)
	}
	rep, err := verifier.Verify(ctx, r, verifier.Options{Trust: trust})
	if err != nil || rep.Verdict != verifier.Verified {
		var buf bytes.Buffer
		if rep != nil {
			rep.WriteText(&buf)
		}
		return fmt.Errorf("export %s through replica %d: %v\n%s", chain, i, err, buf.String())
	}
	raw, err := r.ReadFile(bundle.EntriesFile(bundle.ChainDir(chain)), maxEntriesFile)
	if err != nil {
		return fmt.Errorf("export %s: %w", chain, err)
	}
	seen, err := entrySeqs(raw)
	if err != nil {
		return fmt.Errorf("export %s: %w", chain, err)
	}
	for id, seqs := range seen {
		if len(seqs) != 1 {
			return fmt.Errorf("%s/%s is in the chain %d times, at seqs %v", chain, id, len(seqs), seqs)
		}
	}
	for id, want := range acked {
		if got := seen[id]; len(got) != 1 || got[0] != want {
			return fmt.Errorf("%s/%s was acknowledged at seq %d; the chain holds it at seqs %v", chain, id, want, got)
		}
	}
	return nil
}

// maxEntriesFile bounds the entries file read from a test export.
const maxEntriesFile = 64 << 20

// entrySeqs reads an entries.jsonl file of a bundle: envelope id → the seqs holding it.
func entrySeqs(raw []byte) (map[string][]uint64, error) {
	seen := map[string][]uint64{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var line struct {
			Seq    uint64 `json:"seq"`
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		if err := dec.Decode(&line); errors.Is(err, io.EOF) {
			return seen, nil
		} else if err != nil {
			return nil, fmt.Errorf("entries: %w", err)
		}
		seen[line.Record.ID] = append(seen[line.Record.ID], line.Seq)
	}
}

// checkSeals reads the whole log through replica i and checks that it holds the genesis
// entry at index 0 and nothing else but seal statements, each exactly once; that every
// seal replica i serves is registered at the index holding its statement; and that every
// seal's client was told that index.
func checkSeals(ctx context.Context, c *cluster, i int, chains []string, trust *trustfile.File, a *answers) error {
	entries, err := logEntries(ctx, c, i, trust)
	if err != nil {
		return err
	}
	if len(entries) == 0 || entries[0] != scitt.GenesisEntry(trust.Origin) {
		return fmt.Errorf("log entry 0 is not the genesis entry (%d entries)", len(entries))
	}
	served := map[[32]byte]sealID{}
	var errs []error
	for _, chain := range chains {
		var page api.SealsPage
		if err := c.getJSON(ctx, i, "/v1/chains/"+chain+"/seals", &page); err != nil {
			return err
		}
		for _, s := range page.Seals {
			entry, err := ledger.ParseLink(s.Entry)
			if err != nil {
				return fmt.Errorf("seal %s/%d: entry %q: %w", chain, s.N, s.Entry, err)
			}
			served[entry] = sealID{chain, s.N}
			if at := indexesOf(entries, entry); !s.Registered || len(at) != 1 || at[0] != s.LogIndex {
				errs = append(errs, fmt.Errorf("seal %s/%d (registered %v, log index %d): its statement is at log indexes %v", chain, s.N, s.Registered, s.LogIndex, at))
			}
		}
	}
	for id, s := range a.sealAnswers() {
		if at := indexesOf(entries, s.entry); len(at) != 1 || at[0] != s.index {
			errs = append(errs, fmt.Errorf("seal %s/%d: its client was told log index %d; its statement is at log indexes %v", id.chain, id.n, s.index, at))
		}
		if served[s.entry] != id {
			errs = append(errs, fmt.Errorf("seal %s/%d: the statement its client got is not among the chain's seals", id.chain, id.n))
		}
	}
	for k, e := range entries[1:] {
		if e == entries[0] {
			errs = append(errs, fmt.Errorf("log entry %d is the genesis entry again", k+1))
		} else if _, ok := served[e]; !ok {
			errs = append(errs, fmt.Errorf("log entry %d (%x) is no seal statement of any chain", k+1, e))
		}
	}
	return errors.Join(errs...)
}

// logEntries reads every entry of the log, up to its checkpoint, through replica i's
// tile-log endpoints; the checkpoint must verify with the log key of trust.
func logEntries(ctx context.Context, c *cluster, i int, trust *trustfile.File) ([][32]byte, error) {
	f, v, err := tileFetcher(c, i, trust)
	if err != nil {
		return nil, err
	}
	cp, _, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, v, trust.Origin)
	if err != nil {
		return nil, fmt.Errorf("checkpoint through replica %d: %w", i, err)
	}
	entries := make([][32]byte, 0, cp.Size)
	for b := uint64(0); b*layout.EntryBundleWidth < cp.Size; b++ {
		eb, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, b, cp.Size)
		if err != nil {
			return nil, fmt.Errorf("entry bundle %d through replica %d: %w", b, i, err)
		}
		for _, e := range eb.Entries {
			if len(e) != log.EntrySize {
				return nil, fmt.Errorf("log entry %d is %d bytes", len(entries), len(e))
			}
			entries = append(entries, [32]byte(e))
		}
	}
	if uint64(len(entries)) != cp.Size {
		return nil, fmt.Errorf("%d entries read for a checkpoint of size %d", len(entries), cp.Size)
	}
	return entries, nil
}

// tileFetcher is a tlog-tiles client of replica i's log, and the verifier of its checkpoints
// from trust's current log key.
func tileFetcher(c *cluster, i int, trust *trustfile.File) (*client.HTTPFetcher, note.Verifier, error) {
	if len(trust.LogKeys) == 0 {
		return nil, nil, errors.New("the trust file names no log key")
	}
	return logClient("http://"+c.addrs[i]+"/log/", trust.LogKeys[0], c.http)
}

// logClient is a tlog-tiles client of the log at root (a URL ending in /), and the verifier
// of its checkpoints from vkey.
func logClient(root, vkey string, hc *http.Client) (*client.HTTPFetcher, note.Verifier, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, nil, fmt.Errorf("log key: %w", err)
	}
	u, err := url.Parse(root)
	if err != nil {
		return nil, nil, err
	}
	f, err := client.NewHTTPFetcher(u, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("tile fetcher: %w", err)
	}
	return f, v, nil
}
