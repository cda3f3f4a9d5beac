package main

import (
	"math"
	"sort"
	"time"
)

// percentile returns the p-th percentile (0..100) of xs by nearest rank.
// xs need not be sorted; it is not modified.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// median is the middle of xs (mean of the two middles for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ms converts durations to milliseconds.
func ms(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// RunStat is what one repeated run measured for one figure.
type RunStat struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99,omitempty"`
	// Value is a run's single figure (a rate), when it is not a latency.
	Value float64 `json:"value,omitempty"`
}

// series collects one figure's samples run by run.
type series struct {
	runs [][]float64 // latency samples (ms) per run, or one rate per run
	// pooled keeps every sample of every run, for the JSON.
	pooled []float64
}

func (s *series) addRun(samples []float64) {
	s.runs = append(s.runs, samples)
	s.pooled = append(s.pooled, samples...)
}

func (s *series) samples() int { return len(s.pooled) }

// latencyStats: p50 is the median over runs of each run's p50; p99 is the
// 99th percentile of every run's samples pooled, so one run's bad tail is
// not voted out by the others (the per-run p99s are in runs, and the
// table shows their median beside it).
func (s *series) latencyStats() (p50, p99 float64, runs []RunStat) {
	var a []float64
	for _, r := range s.runs {
		if len(r) == 0 {
			continue
		}
		rs := RunStat{Samples: len(r), P50: percentile(r, 50), P99: percentile(r, 99)}
		runs = append(runs, rs)
		a = append(a, rs.P50)
	}
	return median(a), percentile(s.pooled, 99), runs
}
