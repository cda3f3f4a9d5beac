package main

import (
	"slices"
	"testing"
	"time"
)

// Every round of warm claims leaves the pool of n at least half full (a
// pool below half refills during the claims), and the rounds add up to n.
func TestClaimRoundsKeepThePoolHalfFull(t *testing.T) {
	for n, want := range map[int][]int{1: {1}, 2: {1, 1}, 5: {2, 2, 1}, 12: {6, 6}, 13: {6, 6, 1}} {
		got := tbClaimRounds(n)
		if !slices.Equal(got, want) {
			t.Errorf("rounds of %d: %v, want %v", n, got, want)
		}
		sum := 0
		for _, r := range got {
			sum += r
			if n > 1 && 2*(n-r) < n {
				t.Errorf("rounds of %d: a round of %d leaves the pool below half", n, r)
			}
		}
		if sum != n {
			t.Errorf("rounds of %d add up to %d", n, sum)
		}
	}
}

// A start splits into its intervals from the first time each stage was
// seen; a stage seen before the one it follows (two watches deliver in
// their own order) counts 0, and a stage never seen drops the start.
func TestTimelineSplit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tl := &timeline{seen: map[string]map[string]time.Time{}}
	tl.mark("a", stPod, at(5))
	tl.mark("a", stPod, at(50)) // later sightings do not move the first
	tl.mark("a", stScheduled, at(12))
	tl.mark("a", stReady, at(500))
	got, ok := tl.split("a", t0, at(400), append(bareIntervals, interval{stReady, stAnswer, "answer"}))
	want := []time.Duration{5 * time.Millisecond, 7 * time.Millisecond, 488 * time.Millisecond, 0}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("split = %v, %v; want %v, true", got, ok, want)
	}
	if _, ok := tl.split("a", t0, at(600), coldIntervals); ok {
		t.Error("split with stages never seen (Sandbox, Running) = ok")
	}
}
