package lifecycle

import (
	"testing"
	"time"
)

func TestWaitDeadline(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		left, want time.Duration
	}{
		{10 * time.Second, 10*time.Second - WaitMargin},
		{2*WaitMargin + time.Millisecond, WaitMargin + time.Millisecond},
		{2 * WaitMargin, 2 * WaitMargin}, // too short to spare the margin
		{100 * time.Millisecond, 100 * time.Millisecond},
		{-time.Second, -time.Second},
	} {
		if got := WaitDeadline(now, now.Add(c.left)).Sub(now); got != c.want {
			t.Errorf("WaitDeadline with %s left = now+%s, want now+%s", c.left, got, c.want)
		}
	}
}
