package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// The p99 a target is judged on is the pooled one: one run's bad tail
// counts, where the median of per-run p99s voted it out.
func TestLatencyStatsPoolP99(t *testing.T) {
	flat := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	cases := map[string]struct {
		runs          [][]float64
		p50, p99      float64
		medianRunsP99 float64
	}{
		"one run's tail counts": {
			runs: [][]float64{flat(100, 1), flat(100, 1), append(flat(90, 1), flat(10, 80)...)},
			p50:  1, p99: 80, medianRunsP99: 1,
		},
		"p50 is the median of per-run p50s": {
			runs: [][]float64{flat(10, 2), flat(10, 4), flat(10, 9)},
			p50:  4, p99: 9, medianRunsP99: 4,
		},
		"empty runs are not runs": {runs: [][]float64{{}, flat(5, 3)}, p50: 3, p99: 3, medianRunsP99: math.NaN()},
		"no samples":              {runs: nil, p50: math.NaN(), p99: math.NaN(), medianRunsP99: math.NaN()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s series
			for _, r := range tc.runs {
				s.addRun(r)
			}
			p50, p99, runs := s.latencyStats()
			if !sameNum(p50, tc.p50) || !sameNum(p99, tc.p99) {
				t.Errorf("p50 %v p99 %v, want %v %v", p50, p99, tc.p50, tc.p99)
			}
			r, _ := settle(Row{Kind: "latency", Samples: s.samples(), P50: p50, P99: p99, PerRun: runs, Runs: len(runs)})
			if !sameNum(r.P99OfRuns, tc.medianRunsP99) {
				t.Errorf("median of per-run p99s %v, want %v", r.P99OfRuns, tc.medianRunsP99)
			}
		})
	}
}

func sameNum(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func TestSettle(t *testing.T) {
	nan := math.NaN()
	cases := map[string]struct {
		in      Row
		keep    bool
		met     *bool // nil: not judged
		missing bool
	}{
		"judged, no samples: stays, missing, not met": {
			in: Row{Kind: "latency", Target: "p50 ≤ 15 ms", Met: boolp(false), P50: nan, P99: nan}, keep: true, met: boolp(false), missing: true,
		},
		"judged, no samples, a check that NaN passed: still not met": {
			in: Row{Kind: "rate", Target: "≥ 1", Met: boolp(true), P50: nan}, keep: true, met: boolp(false), missing: true,
		},
		"not judged, no samples: goes": {in: Row{Kind: "latency", P50: nan, P99: nan}, keep: false},
		"a reference target without a check, no samples: goes": {
			in: Row{Kind: "latency", Target: "— (≤ 3 ms is for the Python client)", P50: nan}, keep: false,
		},
		"measured and met": {
			in: Row{Kind: "latency", Target: "p50 ≤ 15 ms", Met: boolp(true), P50: 3, P99: 9, Samples: 10, Runs: 1}, keep: true, met: boolp(true),
		},
		"measured, not judged": {in: Row{Kind: "memory", P50: 40, Samples: 1, Runs: 1}, keep: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, keep := settle(tc.in)
			if keep != tc.keep {
				t.Fatalf("keep %v, want %v", keep, tc.keep)
			}
			if !keep {
				return
			}
			if (got.Met == nil) != (tc.met == nil) || (got.Met != nil && *got.Met != *tc.met) {
				t.Errorf("met %v, want %v", ptrBool(got.Met), ptrBool(tc.met))
			}
			if got.Missing != tc.missing {
				t.Errorf("missing %v, want %v", got.Missing, tc.missing)
			}
			if tc.in.Samples == 0 && (!math.IsNaN(got.P50) || !math.IsNaN(got.P99)) {
				t.Errorf("a row without samples has figures %v %v", got.P50, got.P99)
			}
		})
	}
}

func ptrBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestRowCells(t *testing.T) {
	nan := math.NaN()
	cases := map[string]struct {
		in   Row
		want cells
	}{
		"missing latency row with a target": {
			in:   Row{Kind: "latency", Unit: "ms", Target: "p50 ≤ 15 ms", Met: boolp(false), Missing: true, P50: nan, P99: nan, P99OfRuns: nan},
			want: cells{p50: "missing", p99: "missing", p99OfRuns: "—", samples: "0", target: "p50 ≤ 15 ms", met: "no"},
		},
		"warm row with cold claims left out": {
			in: Row{Kind: "latency", Unit: "ms", P50: 4.5, P99: 31, P99OfRuns: 12, Samples: 9, Runs: 3, LeftOut: 3, LeftOutWhat: "cold",
				Target: "p50 ≤ 15 ms", Met: boolp(true)},
			want: cells{p50: "4.50 ms", p99: "31.0 ms", p99OfRuns: "12.0 ms", samples: "9 (3 runs), 3 cold left out", target: "p50 ≤ 15 ms", met: "yes"},
		},
		"cold row with a claim served warm, one run": {
			in:   Row{Kind: "latency", Unit: "ms", P50: 900, P99: 1200, P99OfRuns: nan, Samples: 7, Runs: 1, LeftOut: 1, LeftOutWhat: "warm"},
			want: cells{p50: "900.0 ms", p99: "1200.0 ms", p99OfRuns: "—", samples: "7 (1 run), 1 warm left out", target: "—", met: "—"},
		},
		"a rate has no p99": {
			in:   Row{Kind: "rate", Unit: "execs/s", P50: 812, P99OfRuns: nan, Samples: 2000, Runs: 2, Target: "≥ 2,000/s", Met: boolp(false)},
			want: cells{p50: "812 execs/s", p99: "—", p99OfRuns: "—", samples: "2000 (2 runs)", target: "≥ 2,000/s", met: "no"},
		},
		"missing memory row": {
			in:   Row{Kind: "memory", Unit: "MiB", Missing: true, Met: boolp(false), Target: "≤ 100 MiB", P50: nan, P99: nan, P99OfRuns: nan},
			want: cells{p50: "missing", p99: "—", p99OfRuns: "—", samples: "0", target: "≤ 100 MiB", met: "no"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := rowCells(tc.in); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// No figure without samples is ever printed as 0: not in the table, not in
// the JSON (null).
func TestNoSampleFigureIsNeverZero(t *testing.T) {
	rows := settleRows([]Row{
		{Section: "k8s-runc", Figure: "warm claim", Kind: "latency", Unit: "ms", Target: "p50 ≤ 15 ms", Met: boolp(false)},
		{Section: "local", Figure: "measured", Kind: "latency", Unit: "ms", P50: 1, P99: 2, Samples: 3, Runs: 1,
			PerRun: []RunStat{{Samples: 3, P50: 1, P99: 2}}},
	})
	if len(rows) != 2 {
		t.Fatalf("rows: %d, want 2", len(rows))
	}
	md := (&Report{Rows: rows}).Markdown()
	line := strings.Split(md, "\n")[2]
	if strings.Contains(line, "0.00") || !strings.Contains(line, "missing") || !strings.HasSuffix(line, "| no |") {
		t.Errorf("missing row printed as %q", line)
	}
	b, err := json.Marshal(rows[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"p50", "p99", "p99_median_of_runs"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("JSON %s = %v (present %v), want null", k, v, ok)
		}
	}
	if m["missing"] != true || m["met"] != false {
		t.Errorf("JSON missing %v met %v, want true false", m["missing"], m["met"])
	}
	b, err = json.Marshal(rows[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"p50":1,`) || !strings.Contains(string(b), `"p99_median_of_runs":null`) {
		t.Errorf("measured row as JSON: %s", b)
	}
}

func TestExitStatus(t *testing.T) {
	ran := func(s string) suiteOutcome { return outcomeOf(s, nil) }
	missing := Row{Section: "kwok", Figure: "warm claim", Target: "p50 ≤ 10 ms", Met: boolp(false), Missing: true}
	notMet := Row{Section: "local", Figure: "exec", Target: "p50 ≤ 2 ms", Met: boolp(false), Samples: 10}
	cases := map[string]struct {
		outcomes []suiteOutcome
		rows     []Row
		code     int
		reasons  []string
	}{
		"every suite ran, a target not met is a result": {[]suiteOutcome{ran("local"), ran("kwok")}, []Row{notMet}, 0, nil},
		"a requested suite skipped": {
			[]suiteOutcome{ran("local"), {Suite: "testbed", State: suiteSkipped, Why: []string{"no node bed"}}}, nil, 1,
			[]string{"suite testbed skipped: no node bed"},
		},
		"a suite stopped early": {
			[]suiteOutcome{outcomeOf("testbed", []string{"comparison: pods gone: timed out", "snapshots: x"})}, nil, 1,
			[]string{"suite testbed stopped: comparison: pods gone: timed out; snapshots: x"},
		},
		"a judged row without samples": {
			[]suiteOutcome{ran("kwok")}, []Row{missing, notMet}, 1,
			[]string{`row "kwok: warm claim" has a target (p50 ≤ 10 ms) and no samples`},
		},
		"nothing requested": {nil, nil, 0, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, reasons := exitStatus(tc.outcomes, tc.rows)
			if code != tc.code || !slices.Equal(reasons, tc.reasons) {
				t.Errorf("got %d %q, want %d %q", code, reasons, tc.code, tc.reasons)
			}
		})
	}
}
