package main

import (
	"testing"

	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/trustfile"
)

// fetchTrust is the trust file the evidentd at base publishes, fetched as a user would.
func fetchTrust(t testing.TB, base string) *trustfile.File { return testinfra.FetchTrust(t, base) }
