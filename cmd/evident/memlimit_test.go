package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestMemoryLimit: without GOMEMLIMIT evident runs under its default soft limit; with it, the
// limit the runtime took from the variable stays.
func TestMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Errorf("without GOMEMLIMIT the limit is %d, want %d", got, defaultMemoryLimit)
	}
	debug.SetMemoryLimit(1 << 30)
	applyMemoryLimit(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("with GOMEMLIMIT=1GiB the limit is %d, want %d", got, 1<<30)
	}
}
