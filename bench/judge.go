package main

// How a row is judged and shown, and what the run's exit status is: the
// decisions apart from the suites that measure, so that a figure with no
// samples can never pass for a measurement, and a run that left out what
// was asked for can never exit 0.

import (
	"fmt"
	"math"
	"strings"
)

// settle makes a row say what it rests on, and whether it stays in the
// table. A row with no samples has no figures (NaN: "missing" in the table,
// null in the JSON); when it is judged against a target it stays, not met,
// so a phase that never ran shows as a miss; without a target it goes.
// P99OfRuns (the median of the per-run p99s) is derived from PerRun for
// latency rows measured over more than one run.
func settle(r Row) (Row, bool) {
	if r.Samples == 0 {
		r.P50, r.P99, r.P99OfRuns = math.NaN(), math.NaN(), math.NaN()
		r.PerRun = nil
		if r.Met == nil {
			return r, false
		}
		r.Missing = true
		r.Met = boolp(false)
		return r, true
	}
	r.P99OfRuns = math.NaN()
	if r.Kind == "latency" && len(r.PerRun) > 1 {
		var p99s []float64
		for _, run := range r.PerRun {
			p99s = append(p99s, run.P99)
		}
		r.P99OfRuns = median(p99s)
	}
	return r, true
}

// settleRows settles every row and keeps those that stay.
func settleRows(rows []Row) []Row {
	out := rows[:0:0]
	for _, r := range rows {
		if s, keep := settle(r); keep {
			out = append(out, s)
		}
	}
	return out
}

// Cells of one row in the Markdown table.
type cells struct {
	p50, p99, p99OfRuns, samples, target, met string
}

// rowCells formats a row: a figure with no samples reads "missing" (never
// 0), a figure that does not apply "—", and the samples cell names the
// answers left out of the figure (claims that came back cold from a warm
// pool, or warm when a cold start was asked for).
func rowCells(r Row) cells {
	c := cells{p50: fmtNum(r.P50, r.Unit), p99: fmtNum(r.P99, r.Unit), p99OfRuns: fmtNum(r.P99OfRuns, r.Unit),
		samples: fmt.Sprintf("%d (%d runs)", r.Samples, r.Runs), target: r.Target, met: "—"}
	if r.Runs == 1 {
		c.samples = fmt.Sprintf("%d (1 run)", r.Samples)
	}
	if r.Kind != "latency" && (r.P99 == 0 || math.IsNaN(r.P99)) { // one value: a rate, a count, a size
		c.p99 = "—"
	}
	if r.Missing || r.Samples == 0 {
		c.p50, c.samples = "missing", "0"
		if r.Kind == "latency" {
			c.p99 = "missing"
		}
	}
	if r.LeftOut > 0 {
		c.samples += fmt.Sprintf(", %d %s left out", r.LeftOut, r.LeftOutWhat)
	}
	if c.target == "" {
		c.target = "—"
	}
	if r.Met != nil {
		c.met = "no"
		if *r.Met {
			c.met = "yes"
		}
	}
	return c
}

// Suite states.
const (
	suiteRan     = "ran"
	suiteSkipped = "skipped" // its bed is not there, or it could not start
	suiteStopped = "stopped" // it began but a part of it failed or did not run
)

// suiteOutcome is what became of one requested suite.
type suiteOutcome struct {
	Suite string `json:"suite"`
	State string `json:"state"`
	// Why lists what was skipped or failed, one entry per part.
	Why []string `json:"why,omitempty"`
}

// outcomeOf is a suite's outcome from the parts that failed or were left
// out (none: it ran in full).
func outcomeOf(suite string, failed []string) suiteOutcome {
	if len(failed) == 0 {
		return suiteOutcome{Suite: suite, State: suiteRan}
	}
	return suiteOutcome{Suite: suite, State: suiteStopped, Why: failed}
}

// exitStatus is the run's exit status: 1 when a requested suite was
// skipped or stopped early, or a row judged against a target has no
// samples; 0 otherwise. A target that was measured and not met is a
// result, not a failure of the run. reasons say why, one line each.
func exitStatus(outcomes []suiteOutcome, rows []Row) (int, []string) {
	var reasons []string
	for _, o := range outcomes {
		if o.State != suiteRan {
			reasons = append(reasons, fmt.Sprintf("suite %s %s: %s", o.Suite, o.State, strings.Join(o.Why, "; ")))
		}
	}
	for _, r := range rows {
		if r.Missing {
			reasons = append(reasons, fmt.Sprintf("row %q has a target (%s) and no samples", r.Section+": "+r.Figure, r.Target))
		}
	}
	if len(reasons) > 0 {
		return 1, reasons
	}
	return 0, nil
}
