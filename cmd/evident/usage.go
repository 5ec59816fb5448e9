package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// requireFlags reports a usage error naming, in the order given, the flags of cmd that are
// required and were left empty.
func requireFlags(cmd *cobra.Command, names ...string) (int, bool) {
	var empty []string
	for _, n := range names {
		if cmd.Flags().Lookup(n).Value.String() == "" {
			empty = append(empty, "-"+n)
		}
	}
	if len(empty) > 0 {
		return usageErr(cmd, "missing %s", strings.Join(empty, ", ")), false
	}
	return 0, true
}
