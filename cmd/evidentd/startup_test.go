package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStartupNamesKeyFiles: on first start evidentd logs every key file it created, with
// whether it is secret, and its version.
func TestStartupNamesKeyFiles(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"EVIDENT_DATA": data, "EVIDENT_LISTEN": "127.0.0.1:0", "EVIDENT_LOG_FORMAT": "json", "EVIDENT_CHECKPOINT_INTERVAL": "100ms"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, func(k string) string { return env[k] }, io.Discard, &logs) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "no write token configured") {
		if time.Now().After(deadline) {
			t.Fatalf("no start:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	secret := map[string]bool{}
	var version string
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["msg"] {
		case "key file":
			rel, err := filepath.Rel(data, m["path"].(string))
			if err != nil || m["holds"] == "" {
				t.Errorf("key file line %v", m)
			}
			secret[rel] = m["secret"].(bool)
		case "evidentd listening":
			version, _ = m["version"].(string)
		}
	}
	want := map[string]bool{"keys/log.key": true, "keys/log.vkey": false, "keys/service.key": true, "keys/service-history.json": false, "keys/cop-node.key": true}
	for f, s := range want {
		if got, ok := secret[f]; !ok || got != s {
			t.Errorf("%s: logged %v (secret %v), want secret %v", f, ok, got, s)
		}
	}
	if len(secret) != len(want) {
		t.Errorf("key files logged: %v", secret)
	}
	if version == "" {
		t.Error("the start line carries no version")
	}
}
