package main

import (
	"slices"
	"testing"
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
