package log

import (
	"fmt"
	"time"

	"github.com/transparency-dev/tessera"

	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogpolicy"
)

// DefaultWitnessTimeout is how long a checkpoint waits for its witness quorum when
// WitnessConfig.Timeout is zero (Tessera's own default).
const DefaultWitnessTimeout = tessera.DefaultWitnessTimeout

// WitnessConfig makes the log publish only checkpoints cosigned by external witnesses
// (C2SP tlog-witness, through Tessera's WithWitnesses).
//
// Fail-closed (FailOpen false, the default): a checkpoint whose quorum is not met within
// Timeout is not published; appends wait (and Append's callers time out) until the
// witnesses answer again. Nothing is lost: the entries are sequenced and published with
// the next checkpoint the quorum cosigns. This is the setting that makes a receipt's
// checkpoint always witnessed.
//
// Fail-open (FailOpen true): the checkpoint is published with whatever cosignatures
// arrived; the log keeps running when witnesses are down, and verifiers report the
// unmet quorum of such checkpoints as not evaluated. Tessera marks this mode as
// transitional.
type WitnessConfig struct {
	// Policy is a tlog-policy (tlogpolicy) naming each witness with its cosignature
	// verifier key and URL (the witness's submission prefix), and the quorum.
	Policy []byte
	// FailOpen publishes checkpoints whose quorum is not met.
	FailOpen bool
	// Timeout bounds the wait for the quorum (default DefaultWitnessTimeout); Tessera
	// cancels the witness requests when it passes.
	Timeout time.Duration
	// OnRefusal, when set, is called with every refusal of the log's checkpoint by a witness
	// of the policy as contradicting a checkpoint the witness cosigned (IsRefusal), before
	// Tessera reads the answer. It must not block for long: the quorum's wait includes it.
	OnRefusal func(*misbehaviour.Refusal)
}

// witnessOptions turns a WitnessConfig into Tessera's append option arguments and the
// verifier-side policy (without URLs) that bundles carry.
func witnessOptions(c *WitnessConfig) (tessera.WitnessGroup, *tessera.WitnessOptions, *tlogpolicy.Policy, error) {
	p, err := tlogpolicy.Parse(c.Policy)
	if err != nil {
		return tessera.WitnessGroup{}, nil, nil, fmt.Errorf("log: witness policy: %w", err)
	}
	for _, w := range p.Witnesses {
		if w.URL == "" {
			return tessera.WitnessGroup{}, nil, nil, fmt.Errorf("log: witness policy: witness %q has no URL: the log cannot reach it", w.Name)
		}
	}
	g, err := tessera.NewWitnessGroupFromPolicy(c.Policy)
	if err != nil {
		return tessera.WitnessGroup{}, nil, nil, fmt.Errorf("log: witness policy (tessera): %w", err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultWitnessTimeout
	}
	return g, &tessera.WitnessOptions{Timeout: timeout, FailOpen: c.FailOpen}, p.WithoutURLs(), nil
}

// WitnessPolicy returns the log's witness policy without URLs (what a verifier needs), or
// nil when the log publishes without witnesses.
func (l *Log) WitnessPolicy() *tlogpolicy.Policy { return l.witnessPolicy }
