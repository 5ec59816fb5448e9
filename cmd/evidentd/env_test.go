package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestMalformedEnvironmentIsAnError: a bad EVIDENT_* value stops evidentd with a message that
// names it, before anything is created; it never falls back to the default silently.
func TestMalformedEnvironmentIsAnError(t *testing.T) {
	for name, value := range map[string]string{
		"EVIDENT_MAX_BODY":          "64MB",
		"EVIDENT_MAX_BATCH":         "lots",
		"EVIDENT_WITNESS_FAIL_OPEN": "yes please",
		"EVIDENT_LOG_MLDSA":         "on",
	} {
		env := map[string]string{name: value, "EVIDENT_DATA": t.TempDir() + "/data"}
		err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v", name, value, err)
		}
	}
}

func TestParseTokens(t *testing.T) {
	toks, err := parseTokens("aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb=wsp_, cccccccccccccccc=run-=operator:post@acme")
	if err != nil || len(toks) != 3 {
		t.Fatalf("%v %v", toks, err)
	}
	if toks[0].Prefix != "" || toks[1].Prefix != "wsp_" || toks[2].Prefix != "run-" || toks[2].Operator != "operator:post@acme" || toks[1].Operator != "" {
		t.Fatalf("%+v", toks)
	}
	if _, err := parseTokens("short=wsp_"); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
