// Command evidentd is Evident's service: it takes signed evidence envelopes, checks and
// chains them, seals chain roots into a Tessera transparency log and exports offline
// bundles. With no flags it runs on its embedded default: ./evident-data, 127.0.0.1:8080.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/evident-log/evident/internal/buildinfo"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/logging"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile"
	"k8s.io/klog/v2"
)

// Exit codes.
const (
	exitFailure = 1  // evidentd could not start or stopped on an error
	exitUsage   = 64 // EX_USAGE: a flag, environment variable or config file is invalid
)

// maxRecordCap bounds --max-record-bytes: a record is held several times over in memory
// while it is parsed, encoded, hashed and written (docs/operations.md, "Record limits").
const maxRecordCap = 1 << 30

// maxConnsCap bounds --max-conns: each connection is a file descriptor, and a limit no file
// table reaches is no limit.
const maxConnsCap = 1 << 20

// ownFiles is what evidentd keeps of its file descriptor limit for its own files (the ledger
// store's tables and write-ahead log, the log's tiles, keys) besides --max-conns connections.
const ownFiles = 1024

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stderr := io.Writer(os.Stderr)
	if helpRequested(os.Args[1:]) {
		stderr = os.Stdout
	}
	code := exitCode(run(ctx, os.Args[1:], os.Getenv, os.Stdout, stderr), os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a configuration refusal: nothing was created, the exit code is exitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitCode reports err on stderr and maps it to the process exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "evidentd:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// run parses and checks the whole configuration, then starts evidentd and serves until ctx
// ends. A configuration refusal is a *usageError returned before anything is created on disk.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, buildinfo.Read().Program("evidentd"))
		return nil
	}
	return serve(ctx, o)
}

// options is the checked configuration of one run.
type options struct {
	cfg     daemon.Config
	version bool
	logger  *slog.Logger
}

// parseConfig reads flags, environment and config file and checks every value, naming the
// flag or the environment variable a bad value came from; it touches nothing on disk
// beyond reading the files the configuration names.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	getenv, cfgErr := withConfigFile(args, getenv)
	if cfgErr != nil {
		return nil, &usageError{cfgErr}
	}
	fs := flag.NewFlagSet("evidentd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	// A malformed environment value is an error, never silently the default.
	var envErrs []error
	envInt := func(name string, def int64) int64 {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			envErrs = append(envErrs, fmt.Errorf("%s: invalid integer %q", name, v))
			return def
		}
		return n
	}
	envBool := func(name string, def bool) bool {
		v := getenv(name)
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			envErrs = append(envErrs, fmt.Errorf("%s: invalid boolean %q (want true or false)", name, v))
			return def
		}
		return b
	}
	var cfg daemon.Config
	fs.StringVar(&cfg.Data, "data", env("EVIDENT_DATA", daemon.DefaultData), "data directory: tile log, ledger store, keys (env EVIDENT_DATA)")
	fs.StringVar(&cfg.Listen, "listen", env("EVIDENT_LISTEN", daemon.DefaultListen), "HTTP listen address (env EVIDENT_LISTEN)")
	fs.StringVar(&cfg.Origin, "origin", env("EVIDENT_ORIGIN", daemon.DefaultOrigin), "log origin, the checkpoint key name; stable forever (env EVIDENT_ORIGIN)")
	// The settings the served profiles declare (ledger/profile/service): one flag each.
	profileSettings := map[string]*string{}
	for _, p := range profile.Default().Providers() {
		for _, st := range p.Settings() {
			profileSettings[st.Name] = fs.String(st.Name, env(st.Env, ""), st.Usage+" (env "+st.Env+")")
		}
	}
	fs.StringVar(&cfg.Issuer, "issuer", env("EVIDENT_ISSUER", ""), "CWT issuer of the service's statements (env EVIDENT_ISSUER; default evident:<origin>)")
	fs.StringVar(&cfg.ServiceKey, "service-key", env("EVIDENT_SERVICE_KEY", ""), "PEM private key signing statements and receipts, created if missing (env EVIDENT_SERVICE_KEY; default <data>/keys/service.key; password from EVIDENT_SERVICE_KEY_PASSWORD)")
	cpi := textFlag(fs, "checkpoint-interval", "duration", env("EVIDENT_CHECKPOINT_INTERVAL", "1s"), "how often the log publishes a checkpoint, >= 100ms (env EVIDENT_CHECKPOINT_INTERVAL)")
	sealEvery := textFlag(fs, "seal-every", "count", env("EVIDENT_SEAL_EVERY", strconv.Itoa(daemon.DefaultSealEvery)), "seal a chain after this many new entries, 0 = never (env EVIDENT_SEAL_EVERY)")
	sealInterval := textFlag(fs, "seal-interval", "duration", env("EVIDENT_SEAL_INTERVAL", daemon.DefaultSealInterval.String()), "seal chains that grew this often, 0 = never (env EVIDENT_SEAL_INTERVAL)")
	tokens := fs.String("tokens", env("EVIDENT_TOKENS", ""), "write tokens, comma-separated SECRET[=CHAIN_PREFIX[=OPERATOR]] (OPERATOR: the identity recorded in ChiefLab records) (env EVIDENT_TOKENS); none: writes from loopback only")
	maxBody := fs.Int64("max-body", envInt("EVIDENT_MAX_BODY", server.DefaultMaxBody), "largest ingest request body in bytes; raised to --max-record-bytes plus 1 MiB when below it and not set (env EVIDENT_MAX_BODY)")
	maxDepth := fs.Int64("max-depth", envInt("EVIDENT_MAX_DEPTH", canonical.DefaultMaxDepth), "most nested arrays and objects in one record, 1 to "+strconv.Itoa(canonical.MaxDepthCap)+" (env EVIDENT_MAX_DEPTH)")
	maxRecord := fs.Int64("max-record-bytes", envInt("EVIDENT_MAX_RECORD_BYTES", canonical.DefaultMaxSize), "largest record in bytes (env EVIDENT_MAX_RECORD_BYTES)")
	fs.IntVar(&cfg.MaxBatch, "max-batch", int(envInt("EVIDENT_MAX_BATCH", server.DefaultMaxBatch)), "most records per ingest request (env EVIDENT_MAX_BATCH)")
	maxInFlight := fs.Int64("max-inflight-bytes", envInt("EVIDENT_MAX_INFLIGHT_BYTES", 0), "request body bytes held at once across all requests, at least --max-body; a request with no room is answered 503 overloaded with Retry-After, its body unread (default "+strconv.Itoa(server.DefaultInFlightBodies)+" × --max-body) (env EVIDENT_MAX_INFLIGHT_BYTES)")
	maxConns := fs.Int64("max-conns", envInt("EVIDENT_MAX_CONNS", daemon.DefaultMaxConns), "most HTTP connections open at once; the ones past it wait in the kernel's accept queue (env EVIDENT_MAX_CONNS)")
	readHeaderTimeout := textFlag(fs, "read-header-timeout", "duration", env("EVIDENT_READ_HEADER_TIMEOUT", daemon.DefaultReadHeaderTimeout.String()), "how long a connection may take to send a request's headers (env EVIDENT_READ_HEADER_TIMEOUT)")
	readTimeout := textFlag(fs, "read-timeout", "duration", env("EVIDENT_READ_TIMEOUT", daemon.DefaultReadTimeout.String()), "how long a connection may take to send a whole request, body included (env EVIDENT_READ_TIMEOUT)")
	writeTimeout := textFlag(fs, "write-timeout", "duration", env("EVIDENT_WRITE_TIMEOUT", daemon.DefaultWriteTimeout.String()), "how long a response may wait for its client to read; each write moves the deadline, so a long export is not cut while it is read (env EVIDENT_WRITE_TIMEOUT)")
	idleTimeout := textFlag(fs, "idle-timeout", "duration", env("EVIDENT_IDLE_TIMEOUT", daemon.DefaultIdleTimeout.String()), "how long a keep-alive connection is kept waiting for its next request (env EVIDENT_IDLE_TIMEOUT)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", env("EVIDENT_TLS_CERT", ""), "serve HTTPS with this PEM certificate (env EVIDENT_TLS_CERT)")
	fs.StringVar(&cfg.TLSKey, "tls-key", env("EVIDENT_TLS_KEY", ""), "PEM private key of --tls-cert (env EVIDENT_TLS_KEY)")
	fs.StringVar(&cfg.ClientCA, "client-ca", env("EVIDENT_CLIENT_CA", ""), "mTLS: PEM CA whose client certificates authorize writes, scoped by urn:evident:chains:<prefix> URI SANs (env EVIDENT_CLIENT_CA)")
	logFormat := fs.String("log-format", env("EVIDENT_LOG_FORMAT", "text"), "log format: text or json (env EVIDENT_LOG_FORMAT)")
	fs.StringVar(&cfg.SCITT.RegistrationPolicy, "registration-policy", env("EVIDENT_REGISTRATION_POLICY", ""), "SCRAPI registration policy file (JSON, docs/scitt.md), signed and registered in the log when it changes; none: POST /entries refuses every statement (env EVIDENT_REGISTRATION_POLICY)")
	regWait := textFlag(fs, "registration-wait", "duration", env("EVIDENT_REGISTRATION_WAIT", server.DefaultRegistrationWait.String()), "how long POST /entries waits for publication before answering 202 Accepted (env EVIDENT_REGISTRATION_WAIT)")
	fs.StringVar(&cfg.SCITT.PublicURL, "public-url", env("EVIDENT_PUBLIC_URL", ""), "base URL clients reach evidentd at (http[s]://host[:port][/prefix]), for absolute SCRAPI Location headers; default: each request's scheme and Host (env EVIDENT_PUBLIC_URL)")
	distributed := distributedFlags(fs, getenv, envBool)
	witnessPolicy := fs.String("witness-policy", env("EVIDENT_WITNESS_POLICY", ""), "tlog-policy file of the witnesses that cosign every checkpoint (witness vkeys, URLs, k-of-n quorum); a witness refusing a checkpoint as contradicting one it cosigned is kept in <data>/misbehaviour and logged at ERROR; empty: no witnesses (env EVIDENT_WITNESS_POLICY)")
	witnessFailOpen := fs.Bool("witness-fail-open", envBool("EVIDENT_WITNESS_FAIL_OPEN", false), "publish checkpoints whose witness quorum is not met (default fail-closed: publication stops until the quorum cosigns) (env EVIDENT_WITNESS_FAIL_OPEN=true)")
	fs.BoolVar(&cfg.PostQuantum, "log-mldsa", envBool("EVIDENT_LOG_MLDSA", false), "also sign every checkpoint with ML-DSA-44 (post-quantum), key created on first start in <data>/keys/log-mldsa.key; bundles then carry trust/log-mldsa.vkey (env EVIDENT_LOG_MLDSA=true)")
	witnessTimeout := textFlag(fs, "witness-timeout", "duration", env("EVIDENT_WITNESS_TIMEOUT", "5s"), "how long a checkpoint waits for its witness quorum (env EVIDENT_WITNESS_TIMEOUT)")
	accessLog := fs.Bool("access-log", envBool("EVIDENT_ACCESS_LOG", true), "log one line per HTTP request: method, path, status, bytes, duration, remote (env EVIDENT_ACCESS_LOG=false turns it off)")
	version := fs.Bool("version", false, "print the build (module version, VCS revision and time, Go version) and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: evidentd [flags]\n\nRuns the Evident service. With no flags: data in ./%s, listening on %s.\n\nFlags:\n", daemon.DefaultData, daemon.DefaultListen)
		printFlags(stderr, fs)
	}
	parseErr := fs.Parse(args)
	cfg.ProfileSettings = map[string]string{}
	for name, v := range profileSettings {
		cfg.ProfileSettings[name] = *v
	}
	if err := parseErr; err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if *version {
		return &options{version: true}, nil
	}
	if err := errors.Join(envErrs...); err != nil {
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, &usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	// origin names where a value came from: the flag when given, else its environment
	// variable (or config file line), so that a refusal names what the operator has to fix.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	origin := func(flagName, envName string) string {
		if set[flagName] || getenv(envName) == "" {
			return "-" + flagName
		}
		return envName
	}
	var errs []error
	duration := func(flagName, envName, v string, min time.Duration) time.Duration {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: invalid duration %q", origin(flagName, envName), v))
		case d < 0:
			errs = append(errs, fmt.Errorf("%s: negative duration %q", origin(flagName, envName), v))
		case d < min:
			errs = append(errs, fmt.Errorf("%s: %q is shorter than %s", origin(flagName, envName), v, min))
		}
		return d
	}
	cfg.CheckpointInterval = duration("checkpoint-interval", "EVIDENT_CHECKPOINT_INTERVAL", *cpi, 100*time.Millisecond)
	cfg.SealInterval = duration("seal-interval", "EVIDENT_SEAL_INTERVAL", *sealInterval, 0)
	cfg.SCITT.RegistrationWait = duration("registration-wait", "EVIDENT_REGISTRATION_WAIT", *regWait, 0)
	wt := duration("witness-timeout", "EVIDENT_WITNESS_TIMEOUT", *witnessTimeout, 0)
	cfg.HTTP.ReadHeaderTimeout = duration("read-header-timeout", "EVIDENT_READ_HEADER_TIMEOUT", *readHeaderTimeout, time.Millisecond)
	cfg.HTTP.ReadTimeout = duration("read-timeout", "EVIDENT_READ_TIMEOUT", *readTimeout, time.Millisecond)
	cfg.HTTP.WriteTimeout = duration("write-timeout", "EVIDENT_WRITE_TIMEOUT", *writeTimeout, time.Millisecond)
	cfg.HTTP.IdleTimeout = duration("idle-timeout", "EVIDENT_IDLE_TIMEOUT", *idleTimeout, time.Millisecond)
	var err error
	if cfg.SealEvery, err = strconv.ParseUint(*sealEvery, 10, 64); err != nil {
		errs = append(errs, fmt.Errorf("%s: invalid count %q (want a non-negative integer)", origin("seal-every", "EVIDENT_SEAL_EVERY"), *sealEvery))
	}
	cfg.MaxBody = *maxBody
	if cfg.MaxBody < 0 {
		errs = append(errs, fmt.Errorf("%s: %d is negative", origin("max-body", "EVIDENT_MAX_BODY"), cfg.MaxBody))
	}
	switch {
	case *maxDepth < 1 || *maxDepth > canonical.MaxDepthCap:
		errs = append(errs, fmt.Errorf("%s: %d is outside 1..%d", origin("max-depth", "EVIDENT_MAX_DEPTH"), *maxDepth, canonical.MaxDepthCap))
	case *maxRecord < 1 || *maxRecord > maxRecordCap:
		errs = append(errs, fmt.Errorf("%s: %d is outside 1..%d", origin("max-record-bytes", "EVIDENT_MAX_RECORD_BYTES"), *maxRecord, maxRecordCap))
	default:
		cfg.MaxDepth, cfg.MaxRecordBytes = int(*maxDepth), int(*maxRecord)
		// A body holds at least one record: one at the limit must fit, with room for a batch's
		// framing and a Coordinator audit entry's members around it.
		if need := *maxRecord + 1<<20; cfg.MaxBody > 0 && cfg.MaxBody < need {
			if set["max-body"] || getenv("EVIDENT_MAX_BODY") != "" {
				errs = append(errs, fmt.Errorf("%s: %d is below %s %d plus 1 MiB: a record at the limit could never be sent", origin("max-body", "EVIDENT_MAX_BODY"),
					cfg.MaxBody, origin("max-record-bytes", "EVIDENT_MAX_RECORD_BYTES"), *maxRecord))
			} else {
				cfg.MaxBody = need
			}
		}
	}
	if cfg.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("%s: %d is negative", origin("max-batch", "EVIDENT_MAX_BATCH"), cfg.MaxBatch))
	}
	// The bodies in flight hold at least one body at the limit, which could never be sent otherwise.
	body := cfg.MaxBody
	if body == 0 {
		body = server.DefaultMaxBody
	}
	switch cfg.HTTP.MaxInFlight = *maxInFlight; {
	case cfg.HTTP.MaxInFlight < 0:
		errs = append(errs, fmt.Errorf("%s: %d is negative", origin("max-inflight-bytes", "EVIDENT_MAX_INFLIGHT_BYTES"), cfg.HTTP.MaxInFlight))
	case cfg.HTTP.MaxInFlight == 0:
		cfg.HTTP.MaxInFlight = server.DefaultInFlightBodies * body
	case cfg.HTTP.MaxInFlight < body && body > 0:
		errs = append(errs, fmt.Errorf("%s: %d is below %s %d: a body at that limit could never be taken", origin("max-inflight-bytes", "EVIDENT_MAX_INFLIGHT_BYTES"),
			cfg.HTTP.MaxInFlight, origin("max-body", "EVIDENT_MAX_BODY"), body))
	}
	if *maxConns < 1 || *maxConns > maxConnsCap {
		errs = append(errs, fmt.Errorf("%s: %d is outside 1..%d", origin("max-conns", "EVIDENT_MAX_CONNS"), *maxConns, maxConnsCap))
	} else {
		cfg.HTTP.MaxConns = int(*maxConns)
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		errs = append(errs, fmt.Errorf("%s: invalid address %q: %w", origin("listen", "EVIDENT_LISTEN"), cfg.Listen, err))
	}
	if cfg.Data == "" {
		errs = append(errs, fmt.Errorf("%s: empty data directory", origin("data", "EVIDENT_DATA")))
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		errs = append(errs, errors.New("-tls-cert and -tls-key (EVIDENT_TLS_CERT, EVIDENT_TLS_KEY) go together"))
	}
	if cfg.ClientCA != "" && cfg.TLSCert == "" {
		errs = append(errs, fmt.Errorf("%s: a client CA (mTLS) needs -tls-cert and -tls-key", origin("client-ca", "EVIDENT_CLIENT_CA")))
	}
	for _, f := range []struct{ flag, env, path string }{
		{"tls-cert", "EVIDENT_TLS_CERT", cfg.TLSCert}, {"tls-key", "EVIDENT_TLS_KEY", cfg.TLSKey}, {"client-ca", "EVIDENT_CLIENT_CA", cfg.ClientCA},
		{"witness-policy", "EVIDENT_WITNESS_POLICY", *witnessPolicy}, {"registration-policy", "EVIDENT_REGISTRATION_POLICY", cfg.SCITT.RegistrationPolicy},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", origin(f.flag, f.env), err))
		}
	}
	if _, err := server.CheckPublicURL(cfg.SCITT.PublicURL); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", origin("public-url", "EVIDENT_PUBLIC_URL"), err))
	}
	if cfg.Distributed, err = distributed(); err != nil {
		errs = append(errs, err)
	}
	if *witnessPolicy != "" {
		cfg.Witnesses = &daemon.Witnesses{PolicyFile: *witnessPolicy, FailOpen: *witnessFailOpen, Timeout: wt}
	}
	if pw := getenv("EVIDENT_SERVICE_KEY_PASSWORD"); pw != "" {
		cfg.ServiceKeyPassword = []byte(pw)
	}
	if cfg.Tokens, err = parseTokens(*tokens); err != nil {
		errs = append(errs, err)
	}
	logger, err := logging.New(stderr, *logFormat)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", origin("log-format", "EVIDENT_LOG_FORMAT"), err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &usageError{err}
	}
	cfg.Logger = logger
	cfg.AccessLog = *accessLog
	return &options{cfg: cfg, logger: logger}, nil
}

// serve opens the data directory (creating keys on first start) and serves until ctx ends.
func serve(ctx context.Context, o *options) error {
	cfg, logger := o.cfg, o.logger
	// Tessera logs through klog; send it to the same structured log.
	klog.SetSlogLogger(logger.With("component", "tessera"))

	// Listen first: an address in use stops evidentd before it creates anything.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	d, err := daemon.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := d.Close(); err != nil {
			logger.Error("shutdown", "err", err)
		}
	}()
	scheme := "http://"
	if cfg.TLSCert != "" {
		scheme = "https://"
	}
	logger.Info("evidentd listening", "addr", scheme+ln.Addr().String(), "data", cfg.Data, "origin", d.Log().Origin(), "vkey", d.Log().VerifierKey(),
		"version", buildinfo.Read().String())
	logger.Info("record limits", "max_depth", cfg.MaxDepth, "max_record_bytes", cfg.MaxRecordBytes, "max_body", cfg.MaxBody, "max_batch", cfg.MaxBatch)
	logger.Info("load limits", "max_inflight_bytes", cfg.HTTP.MaxInFlight, "max_conns", cfg.HTTP.MaxConns, "read_header_timeout", cfg.HTTP.ReadHeaderTimeout,
		"read_timeout", cfg.HTTP.ReadTimeout, "write_timeout", cfg.HTTP.WriteTimeout, "idle_timeout", cfg.HTTP.IdleTimeout)
	if files, ok := fileLimit(); ok && files < uint64(cfg.HTTP.MaxConns)+ownFiles {
		logger.Warn("the open file limit leaves evidentd too few descriptors for its own files once --max-conns connections are open: raise the limit (LimitNOFILE=, ulimit -n) or lower --max-conns",
			"open_file_limit", files, "max_conns", cfg.HTTP.MaxConns, "kept_for_files", ownFiles)
	}
	for _, k := range d.KeyFiles() {
		logger.Info("key file", "path", k.Path, "secret", k.Secret, "holds", k.Holds)
	}
	if cfg.Witnesses != nil {
		mode := "fail-closed: checkpoints are published only with the witness quorum"
		if cfg.Witnesses.FailOpen {
			mode = "fail-open: checkpoints are published even without the witness quorum"
		}
		logger.Info("witnesses", "policy", cfg.Witnesses.PolicyFile, "mode", mode, "timeout", cfg.Witnesses.Timeout)
	}
	if len(cfg.Tokens) == 0 && cfg.ClientCA == "" {
		logger.Warn("no write token configured: writes are accepted from loopback clients only (set --tokens)")
	}
	sig, stopSignals := backupSignals()
	defer stopSignals()
	backupsDone := make(chan struct{})
	backupCtx, stopBackups := context.WithCancel(ctx)
	go func() {
		defer close(backupsDone)
		takeBackups(backupCtx, d, cfg.Data, sig, logger)
	}()
	err = d.Serve(ctx, ln)
	logger.Info("evidentd stopping")
	stopBackups()
	<-backupsDone // before the store closes
	return err
}

func parseTokens(s string) ([]server.Token, error) {
	var out []server.Token
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		// SECRET[=CHAIN_PREFIX[=OPERATOR]]: the operator identity is recorded in ChiefLab records.
		fields := strings.SplitN(part, "=", 3)
		t := server.Token{Secret: fields[0]}
		if len(fields) > 1 {
			t.Prefix = fields[1]
		}
		if len(fields) > 2 {
			t.Operator = fields[2]
		}
		if len(t.Secret) < 16 {
			return nil, errors.New("-tokens: each token secret must be at least 16 characters")
		}
		out = append(out, t)
	}
	return out, nil
}

// kindedText is a flag read as text, parsed only after the environment and the config file
// are merged so that a bad value names where it came from; kind is the type help shows
// (duration, count) instead of "string".
type kindedText struct {
	v    *string
	kind string
}

func (t kindedText) String() string {
	if t.v == nil {
		return ""
	}
	return *t.v
}

func (t kindedText) Set(s string) error { *t.v = s; return nil }

// textFlag defines a flag read as text whose help names kind as its type.
func textFlag(fs *flag.FlagSet, name, kind, def, usage string) *string {
	v := def
	fs.Var(kindedText{v: &v, kind: kind}, name, usage)
	return &v
}

// printFlags is flag.PrintDefaults with each flag's value type as help shows it: a
// textFlag's kind, else the flag package's own name (int, string; nothing for a boolean),
// and the default unquoted unless it is a string.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if t, ok := f.Value.(kindedText); ok {
			kind = t.kind
		}
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if def := f.DefValue; def != "" && def != "false" && def != "0" {
			if kind == "string" {
				def = strconv.Quote(def)
			}
			line += " (default " + def + ")"
		}
		fmt.Fprintln(w, line)
	})
}
