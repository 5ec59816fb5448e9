package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evident-log/evident/internal/evidentd/refusals"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
)

// Witnesses configures evidentd's checkpoint witnessing (Config.Witnesses).
type Witnesses struct {
	// PolicyFile is a tlog-policy file (tlogpolicy) naming the witnesses with their
	// cosignature verifier keys and URLs, and the quorum (k of n)
	// (--witness-policy, EVIDENT_WITNESS_POLICY).
	PolicyFile string
	// FailOpen publishes checkpoints whose quorum was not met within Timeout
	// (--witness-fail-open, EVIDENT_WITNESS_FAIL_OPEN). The default, fail-closed, stops
	// publication while the quorum is unreachable: appends and seals wait and time out,
	// and resume with the next checkpoint the quorum cosigns.
	FailOpen bool
	// Timeout bounds the wait for the quorum of one checkpoint
	// (--witness-timeout, EVIDENT_WITNESS_TIMEOUT; default log.DefaultWitnessTimeout).
	Timeout time.Duration
}

// logOptions adds the witness configuration to the log's options; onRefusal is told of each
// refusal of the log's checkpoint by a witness (log.WitnessConfig.OnRefusal).
func (w *Witnesses) logOptions(lo log.Options, onRefusal func(*misbehaviour.Refusal)) (log.Options, error) {
	b, err := os.ReadFile(w.PolicyFile)
	if err != nil {
		return lo, fmt.Errorf("witness policy: %w", err)
	}
	lo.Witnesses = &log.WitnessConfig{Policy: b, FailOpen: w.FailOpen, Timeout: w.Timeout, OnRefusal: onRefusal}
	return lo, nil
}

// openRefusals opens the keeper of the witness refusals in <data>/misbehaviour and warns
// when it holds some already: an operator must learn of them at every start until they are
// dealt with (checked, and moved out of the directory).
func openRefusals(cfg Config) (*refusals.Keeper, error) {
	dir := filepath.Join(cfg.Data, refusals.Dir)
	k, err := refusals.Open(dir, refusals.Options{LogKeyFile: filepath.Join(cfg.Data, "keys", log.VerifierKeyFile), Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if n := k.Kept(); n > 0 {
		cfg.Logger.Warn(fmt.Sprintf("%s holds %d refusals of the log's checkpoints by witnesses: each says the log's signing key may have signed another history; check each with evident misbehaviour check FILE --log-key %s, and move it out of the directory once dealt with",
			dir, n, filepath.Join(cfg.Data, "keys", log.VerifierKeyFile)), "refusals", n, "dir", dir)
	}
	return k, nil
}
