package daemon

import (
	"fmt"
	"os"
	"time"

	"github.com/evident-log/evident/tilelog"
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

// logOptions adds the witness configuration to the log's options.
func (w *Witnesses) logOptions(lo tilelog.Options) (tilelog.Options, error) {
	b, err := os.ReadFile(w.PolicyFile)
	if err != nil {
		return lo, fmt.Errorf("witness policy: %w", err)
	}
	lo.Witnesses = &tilelog.WitnessConfig{Policy: b, FailOpen: w.FailOpen, Timeout: w.Timeout}
	return lo, nil
}
