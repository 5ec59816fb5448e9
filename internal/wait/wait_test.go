package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	ctx := context.Background()
	if err := Sleep(ctx, time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v", err)
	}
	if err := Sleep(ctx, 0); err != nil {
		t.Fatalf("Sleep(0) = %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	for _, d := range []time.Duration{0, -time.Second, time.Hour} {
		if err := Sleep(done, d); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep(%v) on an ended context = %v", d, err)
		}
	}
}
