// Command evident-witness is a transparency log witness (C2SP tlog-witness): it cosigns the
// checkpoints of the logs listed in its known-logs file once they are shown consistent with
// the last one it cosigned, and never cosigns a fork. See the witness package for the
// protocol and witness/README.md for operation.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/evident-log/evident/internal/buildinfo"
	"github.com/evident-log/evident/internal/logging"
	"github.com/evident-log/evident/internal/netlimit"
	"github.com/evident-log/evident/witness"
	"golang.org/x/mod/sumdb/note"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := os.Stderr
	if helpRequested(os.Args[1:]) {
		stderr = os.Stdout // help asked for is an answer, not an error
	}
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "evident-witness:", err)
		}
		os.Exit(exitCode(err))
	}
}

// defaultMaxConns bounds the connections a witness serves at once: the logs it cosigns for
// and their monitors open a few each.
const defaultMaxConns = 1024

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("evident-witness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	listen := fs.String("listen", env("EVIDENT_WITNESS_LISTEN", "127.0.0.1:8081"), "HTTP listen address (env EVIDENT_WITNESS_LISTEN)")
	state := fs.String("state", env("EVIDENT_WITNESS_STATE", "witness-data"), "state directory: latest cosigned checkpoints, proofs of misbehaviour, keys (env EVIDENT_WITNESS_STATE)")
	logs := fs.String("logs", env("EVIDENT_WITNESS_LOGS", ""), "known-logs file, lines \"log <origin> <vkey>...\" (env EVIDENT_WITNESS_LOGS; default <state>/logs.conf)")
	name := fs.String("name", env("EVIDENT_WITNESS_NAME", ""), "witness name, the cosignature key name; needed when the key is created (env EVIDENT_WITNESS_NAME)")
	key := fs.String("key", env("EVIDENT_WITNESS_KEY", ""), "Ed25519 cosigning key file, created if missing (env EVIDENT_WITNESS_KEY; default <state>/witness.key)")
	pqKey := fs.String("mldsa-key", env("EVIDENT_WITNESS_MLDSA_KEY", ""), "also cosign with this ML-DSA-44 key file, created if missing (env EVIDENT_WITNESS_MLDSA_KEY; default: no ML-DSA-44)")
	version := fs.Bool("version", false, "print the build (module version, VCS revision and time, Go version) and exit")
	printKeys := fs.Bool("print-vkeys", false, "print the verifier keys (creating the keys if needed) and exit")
	logFormat := fs.String("log-format", env("EVIDENT_WITNESS_LOG_FORMAT", "text"), "log format: text or json (env EVIDENT_WITNESS_LOG_FORMAT)")
	defConns, connsErr := strconv.Atoi(env("EVIDENT_WITNESS_MAX_CONNS", strconv.Itoa(defaultMaxConns)))
	maxConns := fs.Int("max-conns", defConns, "most HTTP connections open at once; the ones past it wait in the kernel's accept queue (env EVIDENT_WITNESS_MAX_CONNS)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: evident-witness [flags]\n\nRuns a C2SP tlog-witness: POST /add-checkpoint, GET /<hex sha256(origin)>/checkpoint, GET /<hex sha256(origin)>/forks.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *version {
		fmt.Fprintln(stdout, buildinfo.Read().Program("evident-witness"))
		return nil
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageErrorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	logger, err := logging.New(stderr, *logFormat)
	if err != nil {
		return usageErrorf("-log-format must be text or json, not %q", *logFormat)
	}
	connsFrom := "-max-conns"
	if !set["max-conns"] && getenv("EVIDENT_WITNESS_MAX_CONNS") != "" {
		connsFrom = "EVIDENT_WITNESS_MAX_CONNS"
	}
	switch {
	case connsErr != nil && !set["max-conns"]:
		return usageErrorf("%s: invalid integer %q", connsFrom, getenv("EVIDENT_WITNESS_MAX_CONNS"))
	case *maxConns < 1:
		return usageErrorf("%s: %d is below 1", connsFrom, *maxConns)
	}

	if *key == "" {
		*key = filepath.Join(*state, "witness.key")
	}
	if *logs == "" {
		*logs = filepath.Join(*state, "logs.conf")
	}
	// Everything a first start needs is checked before anything is created, so that a refusal
	// leaves no empty state directory behind.
	if err := checkFirstStart(*key, *name, *logs, *printKeys); err != nil {
		return err
	}
	if err := os.MkdirAll(*state, 0o700); err != nil {
		return err
	}
	signer, vkey, err := witness.LoadOrCreateKey(*key, *name, witness.AlgEd25519)
	if err != nil {
		return err
	}
	signers, vkeys := []note.Signer{signer}, []string{vkey}
	if *pqKey != "" {
		s, v, err := witness.LoadOrCreateKey(*pqKey, signer.Name(), witness.AlgMLDSA44)
		if err != nil {
			return err
		}
		signers, vkeys = append(signers, s), append(vkeys, v)
	}
	if *printKeys {
		for _, v := range vkeys {
			fmt.Fprintln(stdout, v)
		}
		return nil
	}
	cb, err := os.ReadFile(*logs)
	if err != nil {
		return fmt.Errorf("known-logs file: %w", err)
	}
	cfg, err := witness.ParseConfig(cb)
	if err != nil {
		return err
	}
	st, err := witness.OpenStore(*state)
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := witness.New(witness.Options{Logs: cfg.Logs, Signers: signers, Store: st, Logger: logger})
	if err != nil {
		return err
	}
	tcp, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	// Past the limit, connections wait in the kernel's accept queue: a flood of slow clients
	// holds file descriptors and goroutines up to the limit only, each for the timeouts below.
	ln := netlimit.Listen(tcp, *maxConns)
	logger.Info("evident-witness listening", "addr", "http://"+ln.Addr().String(), "name", w.Name(), "logs", len(cfg.Logs), "vkeys", strings.Join(vkeys, " "))
	srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logger.Info("evident-witness stopping")
	return srv.Shutdown(sctx)
}

// checkFirstStart refuses, before anything is created, a start that could not go on: a key
// to be created with no witness name to put in it, or (unless only the verifier keys are
// asked for) a known-logs file that does not exist.
func checkFirstStart(key, name, logs string, printKeys bool) error {
	if _, err := os.Stat(key); errors.Is(err, fs.ErrNotExist) {
		if name == "" {
			return usageErrorf("-name is needed to create the witness key %s: the name every cosignature carries, e.g. -name witness.example.org (or -key an existing key file)", key)
		}
		if _, _, err := witness.GenerateKey(name, witness.AlgEd25519); err != nil {
			return usageErrorf("-name %q cannot name a key: %v", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("witness key: %w", err)
	}
	if printKeys {
		return nil
	}
	if _, err := os.Stat(logs); errors.Is(err, fs.ErrNotExist) {
		return usageErrorf("known-logs file %s does not exist: write one line \"log <origin> <vkey>\" per log to cosign (witness/README.md), or pass -logs", logs)
	} else if err != nil {
		return fmt.Errorf("known-logs file: %w", err)
	}
	return nil
}
