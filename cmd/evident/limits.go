package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/evident-log/evident/ledger/canonical"
)

// maxRecordCap bounds --max-record-bytes, as evidentd bounds its own.
const maxRecordCap = 1 << 30

// recordLimits are the --max-depth and --max-record-bytes flags of the commands that parse
// records (verify, replay, cop-ledger verify): the verifier's limits, by default the same as
// evidentd's defaults, to be raised as far as the limits of the evidentd that made a bundle.
type recordLimits struct {
	depth, size *int
}

func (l *recordLimits) register(fs *pflag.FlagSet) {
	d := canonical.DefaultLimits()
	l.depth = fs.Int("max-depth", d.MaxDepth, "most nested arrays and objects in one record: as wide as the --max-depth of the evidentd that made the bundle (at most 1048576)")
	l.size = fs.Int("max-record-bytes", d.MaxSize, "largest record in bytes: as large as the --max-record-bytes of the evidentd that made the bundle (the lines of entries.jsonl may be twice that and 64 KiB)")
}

// get checks the flags and returns them as the record limits of the command's verification.
func (l *recordLimits) get(cmd *cobra.Command) (lim canonical.Limits, code int, ok bool) {
	switch {
	case *l.depth < 1 || *l.depth > canonical.MaxDepthCap:
		return lim, usageErr(cmd, "-max-depth must be 1 to %d, not %d", canonical.MaxDepthCap, *l.depth), false
	case *l.size < 1 || *l.size > maxRecordCap:
		return lim, usageErr(cmd, "-max-record-bytes must be 1 to %d, not %d", maxRecordCap, *l.size), false
	}
	return canonical.Limits{MaxDepth: *l.depth, MaxSize: *l.size}, 0, true
}
