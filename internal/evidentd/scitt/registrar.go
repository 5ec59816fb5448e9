package scitt

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
)

// Registrar registers signed statements from external issuers (SCRAPI, POST /entries):
// it checks them against the registration policy in force, stores them as pending
// registrations (durable before the client hears back), appends their log entries in the
// background and stores the receipt once a checkpoint covers them. The registration
// policy is itself a statement the service signs and registers; every registration
// records the policy statement it passed.
type Registrar struct {
	svc    *Service
	regs   store.Registrations
	logger *slog.Logger

	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	policy   *regpolicy.Policy
	policyID string
	inflight map[string]chan struct{} // registration id → closed when in the log
	resigned map[string][]byte        // registration id → its receipt under the current key (Receipt)
}

// ErrNoRegistration is returned for an id that names no registration.
var ErrNoRegistration = errors.New("scitt: no such registration")

// NewRegistrar loads the policy in force from regs and finishes registrations a crash
// left pending. Close stops its background work.
func NewRegistrar(ctx context.Context, svc *Service, regs store.Registrations, logger *slog.Logger) (*Registrar, error) {
	if logger == nil {
		logger = slog.Default()
	}
	bg, cancel := context.WithCancel(context.Background())
	r := &Registrar{svc: svc, regs: regs, logger: logger, bg: bg, cancel: cancel, inflight: map[string]chan struct{}{}, resigned: map[string][]byte{}}
	pols, err := regs.Policies(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if n := len(pols); n > 0 {
		p, err := regpolicy.FromStatement(pols[n-1].Statement, svc.Signer().Public())
		if err != nil {
			// Signed by a retired key: still the policy in force, parse without the check.
			st, perr := receipts.ParseStatement(pols[n-1].Statement)
			if perr != nil {
				cancel()
				return nil, fmt.Errorf("policy in force: %w", err)
			}
			if p, err = regpolicy.Parse(st.Payload); err != nil {
				cancel()
				return nil, fmt.Errorf("policy in force: %w", err)
			}
		}
		r.policy, r.policyID = p, pols[n-1].ID
	}
	if err := r.startPending(ctx); err != nil {
		cancel()
		return nil, err
	}
	r.wg.Go(r.finishPending)
	return r, nil
}

// pendingInterval is how often the registrar looks for registrations left pending by
// another process (a replica that died while registering them).
const pendingInterval = 30 * time.Second

// startPending starts registering every pending registration not in flight here. One
// that another replica is registering is claimed by it: Register waits for it.
func (r *Registrar) startPending(ctx context.Context) error {
	pending, err := r.regs.PendingRegistrations(ctx)
	if err != nil {
		return err
	}
	for _, p := range pending {
		r.start(p)
	}
	return nil
}

// finishPending runs startPending every pendingInterval until the registrar closes.
func (r *Registrar) finishPending() {
	t := time.NewTicker(pendingInterval)
	defer t.Stop()
	for {
		select {
		case <-r.bg.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(r.bg, pendingInterval)
		if err := r.startPending(ctx); err != nil && r.bg.Err() == nil {
			r.logger.Warn("listing pending registrations", "err", err)
		}
		cancel()
	}
}

// Close stops background registration, waiting for appends in flight (bounded by ctx);
// unfinished registrations stay pending and are finished by the next NewRegistrar.
func (r *Registrar) Close(ctx context.Context) error {
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Policy returns the policy in force and the id of its statement ("" and nil if none).
func (r *Registrar) Policy() (*regpolicy.Policy, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.policy, r.policyID
}

// SetPolicy puts p in force: unless the policy in force already has the same content, it
// signs a policy statement, registers it in the log (waiting for its receipt) and makes it
// the policy later registrations are checked against. It returns the policy id.
func (r *Registrar) SetPolicy(ctx context.Context, p *regpolicy.Policy) (string, error) {
	payload, err := p.Marshal()
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if r.policy != nil {
		cur, _ := r.policy.Marshal()
		if bytes.Equal(cur, payload) {
			id := r.policyID
			r.mu.Unlock()
			return id, nil
		}
	}
	// Registrations checked against the policy in force finish before the new policy
	// enters the log, so each one sits in the log where the policy it passed is in force
	// (the verifier replays them by log position).
	waiting := make([]chan struct{}, 0, len(r.inflight))
	for _, ch := range r.inflight {
		waiting = append(waiting, ch)
	}
	r.mu.Unlock()
	for _, ch := range waiting {
		select {
		case <-ch:
		case <-ctx.Done():
			return "", fmt.Errorf("registration policy: waiting for pending registrations: %w", ctx.Err())
		}
	}
	now := time.Now()
	stmt, err := regpolicy.Sign(r.svc.Signer(), r.svc.Issuer(), p, now)
	if err != nil {
		return "", err
	}
	id, err := regpolicy.ID(stmt)
	if err != nil {
		return "", err
	}
	reg := &store.Registration{ID: id, Kind: store.KindPolicy, Statement: stmt, Issuer: r.svc.Issuer(), Subject: regpolicy.Subject, Received: now}
	if _, _, err := r.regs.AddRegistration(ctx, reg); err != nil {
		return "", err
	}
	idx, cp, rcpt, err := r.svc.Register(ctx, stmt)
	if err != nil {
		return "", fmt.Errorf("register policy statement: %w", err)
	}
	stored, err := r.regs.CompleteRegistration(ctx, id, idx, cp, rcpt)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.policy, r.policyID = p, id
	r.mu.Unlock()
	r.logger.Info("registration policy in force", "policy", id, "log_index", stored.LogIndex, "issuers", len(p.Issuers))
	return id, nil
}

// Submit checks statement against the policy in force and stores it as a pending
// registration (or finds the earlier registration of the same statement). It returns the
// registration and a channel closed once the statement is in the log (already closed
// when it is). A statement the policy refuses yields a *regpolicy.Refusal and changes
// nothing.
func (r *Registrar) Submit(ctx context.Context, statement []byte) (*store.Registration, <-chan struct{}, error) {
	p, pid := r.Policy()
	if p == nil {
		return nil, nil, &regpolicy.Refusal{Code: regpolicy.CodeNoPolicy, Detail: "this service has no registration policy in force: it registers no statement"}
	}
	d, err := p.Check(statement)
	if err != nil {
		return nil, nil, err
	}
	entry, err := receipts.EntryHash(statement)
	if err != nil {
		return nil, nil, &regpolicy.Refusal{Code: regpolicy.CodeMalformed, Detail: err.Error()}
	}
	reg := &store.Registration{ID: hex.EncodeToString(entry[:]), Kind: store.KindStatement, Statement: bytes.Clone(statement),
		Issuer: d.Issuer, Subject: d.Subject, PolicyID: pid, Received: time.Now()}
	got, _, err := r.regs.AddRegistration(ctx, reg)
	if err != nil {
		return nil, nil, err
	}
	if got.Registered {
		done := make(chan struct{})
		close(done)
		return got, done, nil
	}
	return got, r.start(*got), nil
}

// start registers a pending registration in the background (once per id).
func (r *Registrar) start(reg store.Registration) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.inflight[reg.ID]; ok {
		return ch
	}
	ch := make(chan struct{})
	r.inflight[reg.ID] = ch
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := r.register(reg)
		r.mu.Lock()
		delete(r.inflight, reg.ID)
		r.mu.Unlock()
		if err == nil {
			close(ch)
		}
	}()
	return ch
}

// register appends one registration and stores its receipt, retrying on pushback and
// transient failures until it succeeds or the registrar closes.
func (r *Registrar) register(reg store.Registration) error {
	delay := 100 * time.Millisecond
	for {
		idx, cp, rcpt, err := r.svc.Register(r.bg, reg.Statement)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = r.regs.CompleteRegistration(ctx, reg.ID, idx, cp, rcpt)
			cancel()
			if err == nil {
				r.logger.Debug("statement registered", "id", reg.ID, "issuer", reg.Issuer, "log_index", idx)
				return nil
			}
		}
		if r.bg.Err() != nil {
			return r.bg.Err()
		}
		r.logger.Warn("registration not finished; retrying", "id", reg.ID, "err", err, "retry_in", delay)
		select {
		case <-r.bg.Done():
			return r.bg.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// Lookup returns a registration by id (ErrNoRegistration if unknown).
func (r *Registrar) Lookup(ctx context.Context, id string) (*store.Registration, error) {
	reg, err := r.regs.Registration(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %.80s", ErrNoRegistration, id)
	}
	return reg, err
}

// ErrPending is returned by Receipt for a registration the log does not hold yet.
var ErrPending = errors.New("scitt: registration pending")

// keptResigned bounds the receipts Receipt keeps: when the cache is full it starts over.
const keptResigned = 4096

// Receipt returns the receipt to serve for a registration: the one stored when it was
// registered while the key that signed it is still the service's current key, otherwise
// (after a rotation, docs/scitt.md) a receipt of the same inclusion — cut from the
// checkpoint stored with the registration — signed with the current key. The stored
// receipt is left as it is: it still verifies with the retired key, which the key set and
// the key history keep. Receipts re-signed here are cached (keptResigned), so that the
// same bytes are served until the service restarts.
func (r *Registrar) Receipt(ctx context.Context, reg *store.Registration) ([]byte, error) {
	if !reg.Registered {
		return nil, fmt.Errorf("%w: %.80s", ErrPending, reg.ID)
	}
	cur := r.svc.Signer().KeyID()
	stored, err := receipts.ParseReceipt(reg.Receipt)
	if err != nil || bytes.Equal(stored.KeyID, cur) {
		// A stored receipt that does not parse is served as it is: re-signing would hide it.
		return reg.Receipt, nil
	}
	r.mu.Lock()
	b, ok := r.resigned[reg.ID]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err = r.svc.Receipt(ctx, reg.LogIndex, reg.Checkpoint)
	if errors.Is(err, ErrOneLeafTree) {
		// A registration of a log created before the genesis rule, alone in its tree:
		// no receipt RFC 9942 allows can be cut from that checkpoint.
		return reg.Receipt, nil
	}
	if err != nil {
		return nil, fmt.Errorf("receipt of registration %.80s under the current key: %w", reg.ID, err)
	}
	r.mu.Lock()
	if len(r.resigned) >= keptResigned {
		clear(r.resigned)
	}
	r.resigned[reg.ID] = b
	r.mu.Unlock()
	return b, nil
}

// Service returns the service the registrar registers into.
func (r *Registrar) Service() *Service { return r.svc }
