package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/testinfra"
)

// startDaemon runs evidentd in-process behind real HTTP on loopback: embedded (dist nil) or
// a replica of the distributed deployment dist.
func startDaemon(t *testing.T, data string, dist *daemon.Distributed) string {
	t.Helper()
	d, err := daemon.Open(context.Background(), daemon.Config{Data: data, CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Distributed: dist})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	return srv.URL
}

// deadURL is a loopback address nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// chainSize reads a chain's size from the evidentd at base.
func chainSize(t *testing.T, base, chain string) uint64 {
	t.Helper()
	resp, err := http.Get(base + "/v1/chains/" + chain)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Size uint64 `json:"size"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("head of %s: %s", chain, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Size
}

// reported returns the per-envelope figure of a cost line of the report, or fails.
func reported(t *testing.T, out, name string) (total, perEnvelope float64) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s+(\S+)\s+\S+\s+(\S+)\s*$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q line in the report:\n%s", name, out)
	}
	total, _ = strconv.ParseFloat(m[1], 64)
	perEnvelope, _ = strconv.ParseFloat(m[2], 64)
	return total, perEnvelope
}

// TestLoad runs the load tool against real evidentd replicas over loopback HTTP, with a dead
// address among them: every envelope is ingested exactly once (each chain has n entries on
// every replica), requests that met the dead address went on to a live one, and the report
// gives the rate and the costs asked for. The distributed case (two replicas on one MariaDB
// database and one MinIO bucket) also reads the database's counters: at least a row written
// per envelope.
func TestLoad(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T) (replicas []string, dsn string)
	}{
		{"embedded", func(t *testing.T) ([]string, string) {
			return []string{startDaemon(t, testinfra.TempDir(t), nil)}, ""
		}},
		{"two distributed replicas", func(t *testing.T) ([]string, string) {
			dsn, s3 := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
			dist := &daemon.Distributed{DSN: dsn, S3Endpoint: s3.Endpoint, S3Bucket: s3.Bucket, S3AccessKey: s3.AccessKey,
				S3SecretKey: s3.SecretKey, S3CreateBucket: true}
			keys := testinfra.TempDir(t) // the replicas share the keys
			first := startDaemon(t, keys, dist)
			return []string{first, startDaemon(t, keys, dist)}, dsn
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			replicas, dsn := c.setup(t)
			var out bytes.Buffer
			cfg := config{urls: append([]string{deadURL(t)}, replicas...), n: 60, batch: 7, chains: 3, prefix: "wsp_load",
				export: filepath.Join(t.TempDir(), "load.zip"), prepare: true, dbDSN: dsn,
				procs: []proc{{name: "self", pid: os.Getpid()}}, out: &out}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := run(ctx, cfg); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			report := out.String()
			t.Log(report)
			if want := fmt.Sprintf("ingested %d envelopes in 3 chain(s), batch 7, %d replica(s), %d requests", 3*60, len(cfg.urls), 3*9); !bytes.Contains(out.Bytes(), []byte(want)) {
				t.Fatalf("report lacks %q:\n%s", want, report)
			}
			if !regexp.MustCompile(`failovers: [1-9]`).MatchString(report) {
				t.Fatalf("no failover from the dead address:\n%s", report)
			}
			for _, r := range replicas {
				for i := range cfg.chains {
					if got := chainSize(t, r, fmt.Sprintf("wsp_load_%d", i)); got != 60 {
						t.Fatalf("chain %d has %d entries on %s, want 60", i, got, r)
					}
				}
			}
			if total, _ := reported(t, report, "self CPU (µs)"); total <= 0 {
				t.Fatalf("no CPU time measured for this process:\n%s", report)
			}
			if dsn != "" {
				if total, per := reported(t, report, "Handler_write"); total < 3*60 || per < 1 {
					t.Fatalf("Handler_write %v (%v per envelope), want at least one row per envelope:\n%s", total, per, report)
				}
			}
			zr, err := zip.OpenReader(cfg.export)
			if err != nil {
				t.Fatalf("export: %v\n%s", err, report)
			}
			defer zr.Close()
			if len(zr.File) == 0 {
				t.Fatal("empty export")
			}
		})
	}
}

// TestOpenLoop runs the load tool open loop (-rate) against a real evidentd on loopback: 200
// envelopes a second for 2 s over 10 chains. The achieved rate is within 20 % of the offered
// one, the report gives the latency percentiles in order, and every envelope is in its chain
// afterwards.
func TestOpenLoop(t *testing.T) {
	base := startDaemon(t, testinfra.TempDir(t), nil)
	var out bytes.Buffer
	cfg := config{urls: []string{base}, n: 40, batch: 1, chains: 10, prefix: "wsp_open", rate: 200, out: &out}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	t.Log(report)
	m := regexp.MustCompile(`open loop: offered 200 envelopes/s on 10 chain\(s\), 400 requests of 1 envelope in (\S+)s: achieved (\S+) envelopes/s`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no open-loop line for 400 requests:\n%s", report)
	}
	// Open loop never runs ahead of its schedule (400 requests at 1/200 s take at least
	// 1.995 s); behind it, a loaded machine may fall, but a schedule kept per chain instead of
	// across them (20/s here) would fall far below 40.
	if achieved, _ := strconv.ParseFloat(m[2], 64); achieved < 40 || achieved > 201 {
		t.Fatalf("achieved %v envelopes/s, offered 200:\n%s", achieved, report)
	}
	p := regexp.MustCompile(`latency from scheduled start \(ms\): p50 (\S+) p90 (\S+) p99 (\S+) p99\.9 (\S+) max (\S+)`).FindStringSubmatch(report)
	if p == nil {
		t.Fatalf("no latency line:\n%s", report)
	}
	prev := 0.0
	for _, s := range p[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v < prev {
			t.Fatalf("latency percentiles not positive and ascending: %v\n%s", p[1:], report)
		}
		prev = v
	}
	if !regexp.MustCompile(`started late by more than 1ms: \d+ of 400 requests`).MatchString(report) {
		t.Fatalf("no count of late starts:\n%s", report)
	}
	for i := range cfg.chains {
		if got := chainSize(t, base, fmt.Sprintf("wsp_open_%d", i)); got != 40 {
			t.Fatalf("chain %d has %d entries, want 40", i, got)
		}
	}
	cfg.batch = 2
	if err := run(ctx, cfg); err == nil {
		t.Fatal("-rate with -batch 2 was accepted")
	}
}
