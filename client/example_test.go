package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// evidentd starts a real evidentd on a loopback port, its log, ledger and keys in a
// temporary directory, and returns its URL and a function that stops it. (A Coordinator
// talks to a long-running evidentd instead: client.New("https://evident.example", …).)
func evidentd() (string, func()) {
	dir, err := os.MkdirTemp("", "evidentd-example")
	if err != nil {
		log.Fatal(err)
	}
	d, err := daemon.Open(context.Background(), daemon.Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	return srv.URL, func() {
		srv.Close()
		d.Close()
		os.RemoveAll(dir)
	}
}

// supportTriage returns a CHAP support triage as signed envelopes: thirteen calls by two
// humans and an agent, with a review and an override.
func supportTriage(ws string) [][]byte {
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		log.Fatal(err)
	}
	return b.Records()
}

// A Coordinator submits signed envelopes, seals the chain into the transparency log and
// exports the offline bundle a regulator verifies with `evident verify`.
func Example() {
	url, stop := evidentd()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := client.New(url, client.WithToken(os.Getenv("EVIDENT_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	const ws = "wsp_support_triage"
	res, err := c.Submit(ctx, ws, supportTriage(ws))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("accepted seq %d..%d, chain size %d\n", res.Accepted[0].Seq, res.Accepted[len(res.Accepted)-1].Seq, res.Size)

	seal, err := c.Seal(ctx, ws, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("seal %d covers %d entries, at log index %d\n", seal.N, seal.Seal.Size, seal.LogIndex)

	var zip bytes.Buffer
	if _, err := c.Export(ctx, client.ExportQuery{Chains: []string{ws}}, &zip); err != nil {
		log.Fatal(err)
	}
	b, err := bundle.OpenZipBytes(zip.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	for _, ch := range b.Manifest.Chains {
		fmt.Printf("bundle: chain %s, profile %s, %d entries, head matches: %v\n", ch.ID, ch.Profile, ch.Size, ch.Head == res.Head)
	}
	// Output:
	// accepted seq 0..12, chain size 13
	// seal 0 covers 13 entries, at log index 1
	// bundle: chain wsp_support_triage, profile chap/0.3, 13 entries, head matches: true
}

// Entries reads a chain back with CHAP audit.read filters, a page at a time.
func ExampleClient_Entries() {
	url, stop := evidentd()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		log.Fatal(err)
	}
	const ws = "wsp_entries"
	if _, err := c.Submit(ctx, ws, supportTriage(ws)); err != nil {
		log.Fatal(err)
	}
	q := client.EntriesQuery{Sender: "human:bob@example.org", Limit: 2}
	for {
		page, err := c.Entries(ctx, ws, q)
		if err != nil {
			log.Fatal(err)
		}
		for _, e := range page.Entries {
			fmt.Println(e.Seq, e.Method, e.Sender)
		}
		if page.Next == nil {
			break
		}
		q.From = *page.Next
	}
	// Output:
	// 3 participant.join human:bob@example.org
	// 10 decide.override human:bob@example.org
}

// A refused record comes back as an *Error carrying the problem code and the record's
// position in the batch; nothing of the batch is stored.
func ExampleIsCode() {
	url, stop := evidentd()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		log.Fatal(err)
	}
	const ws = "wsp_refused"
	recs := supportTriage(ws)
	recs[3] = bytes.Replace(recs[3], []byte(`"ts":"2026-05-17T09:00`), []byte(`"ts":"2026-05-17T09:01`), 1) // no longer what was signed
	_, err = c.Submit(ctx, ws, recs)
	var e *client.Error
	if client.IsCode(err, api.CodeBadSignature) && errors.As(err, &e) {
		fmt.Println(e.StatusCode, e.Code, "at record", *e.Index)
	}
	_, err = c.Head(ctx, ws)
	fmt.Println(client.IsCode(err, api.CodeNoSuchChain))
	// Output:
	// 422 bad_signature at record 3
	// true
}

// WithRetry bounds the retries of 503 answers and failed connections: here up to 8
// attempts, waits from about 100ms doubling up to 5s, logged as they happen.
func ExampleWithRetry() {
	c, err := client.New("https://evident.example", client.WithRetry(client.RetryPolicy{
		MaxAttempts: 8,
		BaseDelay:   100 * time.Millisecond,
		MaxDelay:    5 * time.Second,
		OnRetry: func(attempt int, err error, wait time.Duration) {
			slog.Warn("evidentd busy, retrying", "attempt", attempt, "err", err, "wait", wait)
		},
	}))
	if err != nil {
		log.Fatal(err)
	}
	_ = c
}
