// Package daemon assembles evidentd from its parts: the data directory and its keys, the
// Tessera log, the ledger store, the ingest pipeline with its sealer, and the HTTP server.
// cmd/evidentd parses configuration and calls Run; tests start a Daemon on loopback.
package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evident-log/evident/internal/buildinfo"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/mysql"
	"github.com/evident-log/evident/internal/netlimit"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/log"
)

// Config is evidentd's configuration; every field has a flag and an environment variable
// in cmd/evidentd.
type Config struct {
	Data               string        // data directory (EVIDENT_DATA), default ./evident-data
	Listen             string        // listen address (EVIDENT_LISTEN), default 127.0.0.1:8080
	Origin             string        // log origin, stable forever (EVIDENT_ORIGIN)
	Issuer             string        // CWT issuer of the service's statements (EVIDENT_ISSUER)
	CheckpointInterval time.Duration // (EVIDENT_CHECKPOINT_INTERVAL), default 1s
	SealEvery          uint64        // seal a chain after this many new entries, 0 = off (EVIDENT_SEAL_EVERY)
	SealInterval       time.Duration // seal grown chains this often, 0 = off (EVIDENT_SEAL_INTERVAL)
	ServiceKey         string        // service statement key file (EVIDENT_SERVICE_KEY), default <data>/keys/service.key
	ServiceKeyPassword []byte        // password of an encrypted service key (EVIDENT_SERVICE_KEY_PASSWORD only)
	Tokens             []server.Token
	// TLS: serve HTTPS with this certificate and key (PEM files); ClientCA (PEM) also verifies
	// client certificates that are offered, and a verified one authorizes writes (mTLS),
	// scoped by its urn:evident:chains:<prefix> URI SANs (server.ClientCertScope).
	TLSCert, TLSKey, ClientCA string
	MaxBody                   int64
	MaxBatch                  int
	// MaxDepth and MaxRecordBytes bound one record's nesting and size (--max-depth,
	// --max-record-bytes); 0 leaves canonical's defaults.
	MaxDepth       int
	MaxRecordBytes int
	Logger         *slog.Logger
	// SCITT configures SCRAPI registration (scitt.go).
	SCITT SCITT
	// Distributed, when set, runs evidentd on a MySQL-compatible database and an
	// S3-compatible object store instead of the data directory, so several replicas can
	// serve the same chains and log; the data directory then holds only the keys, which
	// every replica must share.
	Distributed *Distributed
	// Witnesses, when set, sends every checkpoint to external witnesses (C2SP
	// tlog-witness) and publishes it with their cosignatures; see Witnesses for
	// fail-open and fail-closed.
	Witnesses *Witnesses
	// Profiles is the registry of the profiles evidentd serves; nil is profile.Default().
	Profiles *profile.Registry
	// ProfileSettings are the values of the settings the profiles declare
	// (service.Setting, by flag name), e.g. "cop-node-id"; a setting not named is "".
	ProfileSettings map[string]string
	// PostQuantum adds an ML-DSA-44 signature to every checkpoint besides the Ed25519 one
	// (--log-mldsa, EVIDENT_LOG_MLDSA); the key is generated on first start into
	// <data>/keys/log-mldsa.key and bundles carry its verifier key.
	PostQuantum bool
	// AccessLog logs one line per HTTP request (--access-log, EVIDENT_ACCESS_LOG).
	AccessLog bool
	// HTTP bounds the server's connections, timeouts and request bodies in flight; zero
	// fields take their defaults.
	HTTP HTTP
}

// HTTP bounds what the HTTP server holds for its clients (docs/operations.md, "Load limits").
type HTTP struct {
	// MaxInFlight bounds the request body bytes held at once across all requests
	// (--max-inflight-bytes); 0: server.DefaultInFlightBodies × MaxBody.
	MaxInFlight int64
	// MaxConns bounds the connections open at once (--max-conns); the ones past it wait in
	// the kernel's accept queue. 0: DefaultMaxConns.
	MaxConns int
	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout the whole request
	// with its body, IdleTimeout a keep-alive connection's wait for its next request.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// WriteTimeout is how long a response may go without its client reading any of it: each
	// write moves the deadline that far ahead, so a long export is never cut while it is read.
	WriteTimeout time.Duration
}

// Defaults.
const (
	DefaultData         = "evident-data"
	DefaultListen       = "127.0.0.1:8080"
	DefaultOrigin       = "evident.localhost/log"
	DefaultSealInterval = time.Minute
	DefaultSealEvery    = 10000

	// DefaultMaxConns: a sidecar serves a few Coordinators, verifiers and operators, far fewer
	// connections than this. A connection held open by a slow client costs about 20 KiB
	// (BENCHMARKS.md, "Issue 37"): 4096 of them some 80 MiB and 4096 descriptors, within the
	// open file limits Go raises itself to under systemd or in containers. Above it a flood of
	// connections waits in the kernel's accept queue instead of taking the descriptors the
	// ledger and the log need (without a limit, Tessera's POSIX storage panics when it cannot
	// open its lock files); below it (a 2,000-connection slowloris) clients are served as
	// before, each slow connection cut at the header timeout.
	DefaultMaxConns          = 4096
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
)

// orDefault returns h with every zero field set to its default.
func (h HTTP) orDefault() HTTP {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&h.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	set(&h.ReadTimeout, DefaultReadTimeout)
	set(&h.WriteTimeout, DefaultWriteTimeout)
	set(&h.IdleTimeout, DefaultIdleTimeout)
	if h.MaxConns <= 0 {
		h.MaxConns = DefaultMaxConns
	}
	return h
}

// Daemon is a running evidentd (without its listener).
type Daemon struct {
	cfg      Config
	log      *log.Log
	store    store.Store
	pipeline *ingest.Pipeline
	service  *scitt.Service
	handler  http.Handler
	cancel   context.CancelFunc
	scrapi   *scitt.Registrar // nil when the store keeps no registrations
	done     chan struct{}
	conns    atomic.Pointer[netlimit.Listener] // the listener Serve limits, for metrics and tests
}

// Open prepares the data directory (creating keys on first start), opens the log and the
// store, finishes seals a crash left pending and starts the periodic sealer.
func Open(ctx context.Context, cfg Config) (*Daemon, error) {
	if cfg.Data == "" {
		cfg.Data = DefaultData
	}
	if cfg.Profiles == nil {
		cfg.Profiles = profile.Default()
	}
	if cfg.Origin == "" {
		cfg.Origin = DefaultOrigin
	}
	if cfg.Issuer == "" {
		cfg.Issuer = "evident:" + cfg.Origin
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.HTTP = cfg.HTTP.orDefault()
	if err := os.MkdirAll(filepath.Join(cfg.Data, "keys"), 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	signer, _, err := log.LoadOrCreateKey(filepath.Join(cfg.Data, "keys"), cfg.Origin)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	if cfg.ServiceKey == "" {
		cfg.ServiceKey = filepath.Join(cfg.Data, "keys", "service.key")
	}
	key, err := scitt.OpenSigner(ctx, cfg.ServiceKey, cfg.ServiceKeyPassword)
	if err != nil {
		return nil, err
	}
	lo := log.Options{Dir: filepath.Join(cfg.Data, "log"), Signer: signer, CheckpointInterval: cfg.CheckpointInterval, Logger: cfg.Logger}
	if cfg.Distributed != nil {
		if lo, err = cfg.Distributed.logOptions(lo); err != nil {
			return nil, err
		}
	}
	if cfg.PostQuantum {
		pq, _, err := log.LoadOrCreateMLDSAKey(filepath.Join(cfg.Data, "keys"), cfg.Origin)
		if err != nil {
			return nil, fmt.Errorf("post-quantum log key: %w", err)
		}
		lo.AdditionalSigners = append(lo.AdditionalSigners, pq)
	}
	refused, err := openRefusals(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Witnesses != nil {
		if lo, err = cfg.Witnesses.logOptions(lo, refused.Keep); err != nil {
			return nil, err
		}
	}
	l, err := log.Open(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("transparency log: %w", err)
	}
	var st store.Store
	limits := canonical.Limits{MaxDepth: cfg.MaxDepth, MaxSize: cfg.MaxRecordBytes}.OrDefault()
	packetBound := false
	if cfg.Distributed != nil {
		var mst *mysql.Store
		if mst, err = cfg.Distributed.openStore(ctx); err == nil {
			st = mst
			if limits, packetBound, err = fitPacket(ctx, mst, limits, cfg.Logger); err != nil {
				mst.Close()
			}
		}
	} else {
		st, err = openEmbedded(ctx, cfg.Data, cfg.Logger) // embedded.go
	}
	if err != nil {
		l.Close(context.Background())
		return nil, err
	}
	claims, err := openClaims(ctx, st, cfg.Distributed == nil)
	if err != nil {
		st.Close()
		l.Close(context.Background())
		return nil, err
	}
	svc, err := scitt.New(l, key, cfg.Issuer, scitt.Options{Claims: claims, Logger: cfg.Logger})
	if err != nil {
		st.Close()
		l.Close(context.Background())
		return nil, err
	}
	p, err := ingest.New(ingest.Options{Store: st, Profiles: cfg.Profiles.All(), Sealer: svc, SealEvery: cfg.SealEvery, Shared: cfg.Distributed != nil, Logger: cfg.Logger})
	if err != nil {
		st.Close()
		l.Close(context.Background())
		return nil, err
	}
	d := &Daemon{cfg: cfg, log: l, store: st, pipeline: p, service: svc, done: make(chan struct{})}
	if err := p.Recover(ctx); err != nil {
		d.closeParts()
		return nil, fmt.Errorf("finishing pending seals: %w", err)
	}
	sc, err := d.openSCITT(ctx, key.Public())
	if err != nil {
		d.closeParts()
		return nil, err
	}
	exts, err := d.openExtensions()
	if err != nil {
		d.closeParts()
		return nil, err
	}
	d.handler = server.New(server.Config{Pipeline: p, Store: st, Service: svc, Tokens: cfg.Tokens, ClientCerts: cfg.ClientCA != "", MaxBody: cfg.MaxBody, MaxBatch: cfg.MaxBatch, Limits: limits, PacketBound: packetBound,
		MaxInFlight: cfg.HTTP.MaxInFlight, WriteTimeout: cfg.HTTP.WriteTimeout,
		Producer: buildinfo.Read().Program("evidentd"), Logger: cfg.Logger, SCITT: sc, Extensions: exts, Profiles: cfg.Profiles, AccessLog: cfg.AccessLog,
		Metrics: append([]prometheus.Collector{refused.Collector(), d.connMetric()}, storeMetrics(st)...)})
	bg, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		p.RunSealer(bg, cfg.SealInterval)
	}()
	return d, nil
}

// openClaims returns the store's claims on log entries, which make every seal and
// registration one log entry however many replicas register it. The embedded store has
// one process: the claims a previous run left (a crash, a kill) are expired at once, so
// that it finishes its pending seals without waiting for their leases.
func openClaims(ctx context.Context, st store.Store, single bool) (store.Claims, error) {
	claims, ok := st.(store.Claims)
	if !ok {
		return nil, fmt.Errorf("ledger store %T keeps no claims on log entries", st)
	}
	if single {
		if err := claims.ExpireClaims(ctx); err != nil {
			return nil, err
		}
	}
	return claims, nil
}

// Handler returns the HTTP API.
func (d *Daemon) Handler() http.Handler { return d.handler }

// Log returns the transparency log.
func (d *Daemon) Log() *log.Log { return d.log }

// Pipeline returns the ingest pipeline.
func (d *Daemon) Pipeline() *ingest.Pipeline { return d.pipeline }

func (d *Daemon) closeParts() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(d.closeSCITT(ctx), d.store.Close(), d.log.Close(ctx))
}

// Close stops the sealer and closes the store and the log.
func (d *Daemon) Close() error {
	if d.cancel != nil {
		d.cancel()
		<-d.done
	}
	return d.closeParts()
}

// connMetric is the evident_http_connections gauge: connections open on the listener Serve
// limits (0 before Serve).
func (d *Daemon) connMetric() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "evident_http_connections",
		Help: "HTTP connections open (at most --max-conns; the ones past it wait in the kernel's accept queue)."},
		func() float64 {
			if l := d.conns.Load(); l != nil {
				return float64(l.Open())
			}
			return 0
		})
}

// Serve serves the API on ln until ctx ends, then shuts down gracefully. At most
// Config.HTTP.MaxConns connections are open at once: Serve accepts no more until one
// closes, and those past the limit wait in the kernel's accept queue. The write deadline is
// the http.Server's from the end of a request's headers until the handler writes; each write
// then moves it (server.Config.WriteTimeout), so that neither a slow handler nor a long
// export is cut, only a client that stops reading.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	h := d.cfg.HTTP
	srv := &http.Server{Handler: d.handler, ReadHeaderTimeout: h.ReadHeaderTimeout, ReadTimeout: h.ReadTimeout, WriteTimeout: h.WriteTimeout, IdleTimeout: h.IdleTimeout}
	limited := netlimit.Listen(ln, h.MaxConns)
	d.conns.Store(limited)
	ln = limited
	if d.cfg.TLSCert != "" || d.cfg.TLSKey != "" {
		tc, err := d.tlsConfig()
		if err != nil {
			return err
		}
		srv.TLSConfig = tc
		ln = tls.NewListener(ln, tc)
	} else if d.cfg.ClientCA != "" {
		return errors.New("a client CA (mTLS) needs --tls-cert and --tls-key")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// tlsConfig loads the server certificate and, for mTLS, the client CA. Client certificates
// are optional (reads of the log are public) and verified when offered.
func (d *Daemon) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(d.cfg.TLSCert, d.cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if d.cfg.ClientCA != "" {
		pemBytes, err := os.ReadFile(d.cfg.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("client CA %s: no PEM certificate", d.cfg.ClientCA)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// fitPacket lowers the record size limit to what one INSERT carries under the database's
// max_allowed_packet (mysql.Store.LargestRecord) when that is smaller, and says so at WARN:
// a larger record would otherwise be taken by the profile and fail in the database, stopping
// its chain there. bound reports whether the database set the limit.
func fitPacket(ctx context.Context, st *mysql.Store, l canonical.Limits, log *slog.Logger) (_ canonical.Limits, bound bool, err error) {
	largest, err := st.LargestRecord(ctx)
	if err != nil {
		return l, false, err
	}
	if largest >= l.MaxSize {
		return l, false, nil
	}
	log.Warn("record size limited by the database: its max_allowed_packet takes smaller records than --max-record-bytes; raise max_allowed_packet (SET GLOBAL max_allowed_packet, or the server's configuration) and restart to take larger ones",
		"max_record_bytes", l.MaxSize, "records_up_to", largest)
	l.MaxSize = largest
	return l, true, nil
}
