package daemon

import (
	"context"
	"crypto"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/servicekey"
)

// SCITT configures evidentd as a SCITT transparency service for external issuers.
type SCITT struct {
	// RegistrationPolicy is a policy file (regpolicy, JSON) put in force at start
	// (EVIDENT_REGISTRATION_POLICY). When it differs from the policy in force, the new
	// policy is signed and registered in the log first. Without any policy, POST /entries
	// refuses every statement.
	RegistrationPolicy string
	// RegistrationWait bounds how long POST /entries waits for publication before it
	// answers 202 Accepted (EVIDENT_REGISTRATION_WAIT, default server.DefaultRegistrationWait).
	RegistrationWait time.Duration
	// PublicURL is the base URL clients reach the service at (EVIDENT_PUBLIC_URL), for the
	// absolute Location of a registration; empty: each request's scheme and Host.
	PublicURL string
}

// keyHistoryPath is where the service key history lives: beside the key file, or in
// <data>/keys for a KMS key.
func (d *Daemon) keyHistoryPath() string {
	if strings.Contains(d.cfg.ServiceKey, "://") {
		return filepath.Join(d.cfg.Data, "keys", servicekey.HistoryFile)
	}
	return filepath.Join(filepath.Dir(d.cfg.ServiceKey), servicekey.HistoryFile)
}

// openSCITT opens the key history and, when the store keeps registrations, the SCRAPI
// registrar with the configured policy.
func (d *Daemon) openSCITT(ctx context.Context, pub crypto.PublicKey) (*server.SCITTConfig, error) {
	keys, err := scitt.OpenKeyRing(d.keyHistoryPath(), pub, d.log.VerifierKey(), time.Now())
	if err != nil {
		return nil, fmt.Errorf("service key history: %w", err)
	}
	// The log's additional checkpoint signers (today: the ML-DSA-44 one) get windows in
	// the key history too; one dropped or replaced since the last start is retired.
	var additional []string
	if pq := d.log.PostQuantumVerifierKey(); pq != "" {
		additional = append(additional, pq)
	}
	if err := keys.SetAdditionalSigners(additional, time.Now()); err != nil {
		return nil, err
	}
	publicURL, err := server.CheckPublicURL(d.cfg.SCITT.PublicURL)
	if err != nil {
		return nil, err
	}
	sc := &server.SCITTConfig{Keys: keys, Wait: d.cfg.SCITT.RegistrationWait, RetryAfter: d.cfg.CheckpointInterval, PublicURL: publicURL}
	regs, ok := d.store.(store.Registrations)
	if !ok {
		if d.cfg.SCITT.RegistrationPolicy != "" {
			return nil, fmt.Errorf("registration policy: this ledger store keeps no SCRAPI registrations")
		}
		d.cfg.Logger.Info("SCRAPI registration disabled: the ledger store keeps no registrations")
		return sc, nil
	}
	r, err := scitt.NewRegistrar(ctx, d.service, regs, d.cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("SCRAPI registrar: %w", err)
	}
	d.scrapi = r
	sc.Registrar = r
	if d.cfg.SCITT.RegistrationPolicy != "" {
		b, err := os.ReadFile(d.cfg.SCITT.RegistrationPolicy)
		if err != nil {
			return nil, fmt.Errorf("registration policy: %w", err)
		}
		p, err := regpolicy.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("registration policy %s: %w", d.cfg.SCITT.RegistrationPolicy, err)
		}
		if _, err := r.SetPolicy(ctx, p); err != nil {
			return nil, fmt.Errorf("registration policy: %w", err)
		}
	}
	return sc, nil
}

func (d *Daemon) closeSCITT(ctx context.Context) error {
	if d.scrapi == nil {
		return nil
	}
	return d.scrapi.Close(ctx)
}

// Registrar returns the SCRAPI registrar (nil when the store keeps no registrations).
func (d *Daemon) Registrar() *scitt.Registrar { return d.scrapi }
