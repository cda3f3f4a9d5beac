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

// A runtime whose phases stopped early keeps its judged rows, missing and
// not met; the runc-only rows (SandboxClaim path, Python client) are not
// asked of gVisor; the claims left out of a row are on it.
func TestTestbedRowsShowWhatDidNotRun(t *testing.T) {
	runc := &tbFigures{warmCold: 2, pyCold: 1}
	runc.warm.addRun([]float64{5, 6, 7})
	s := &testbedSuite{sections: map[string]*tbFigures{"runc": runc, tbGVisor: {}}, cmpAsked: true}
	rows := settleRows(append(s.rows(), s.cmpRows()...))
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Section+": "+r.Figure] = r
	}
	warm := got["k8s-runc: warm claim via the bridge (Go client)"]
	if warm.Samples != 3 || warm.LeftOut != 2 || warm.LeftOutWhat != "cold" || warm.Met == nil || !*warm.Met {
		t.Errorf("runc warm row: %+v", warm)
	}
	for _, fig := range []string{
		"k8s-runc: warm claim via the bridge (Python client)",
		"k8s-runc: cold claim via the bridge (Go client)",
		"k8s-runc: run_code round trip `1+1`, warm context",
		"k8s-gvisor: warm claim via the bridge (Go client)",
		"k8s-gvisor: cold claim via the bridge (Go client)",
		"k8s-gvisor: run_code round trip `1+1`, warm context",
		"k8s-runc: cold SandboxClaim → Ready: sandpod",
		"k8s-gvisor: cold SandboxClaim → Ready: sandpod",
	} {
		r, ok := got[fig]
		if !ok {
			t.Errorf("%s: not in the table", fig)
			continue
		}
		if !r.Missing || r.Met == nil || *r.Met {
			t.Errorf("%s: missing %v met %s, want missing and not met", fig, r.Missing, ptrBool(r.Met))
		}
	}
	if py := got["k8s-runc: warm claim via the bridge (Python client)"]; py.LeftOut != 1 {
		t.Errorf("Python row: %d cold left out, want 1", py.LeftOut)
	}
	if _, ok := got["k8s-gvisor: warm claim via the bridge (Python client)"]; ok {
		t.Error("a Python client row for gVisor, which it does not measure")
	}
	if _, ok := got["k8s-runc: bare pod start (same image, no sandpod)"]; ok {
		t.Error("a row without a target and without samples stayed")
	}
	s.cmpAsked = false
	if rows := s.cmpRows(); len(rows) != 0 {
		t.Errorf("comparison rows without the comparison asked for: %d", len(rows))
	}
}
