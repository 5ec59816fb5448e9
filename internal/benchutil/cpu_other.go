//go:build !unix

package benchutil

import "time"

// processCPU is not measured here: Report then reports nothing.
func processCPU() time.Duration { return 0 }
