package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Row is one figure of the table. Every suite (the local engine today; the
// Kubernetes path, at scale and its controller memory later) adds rows to
// the same Report, so `make bench` stays one table and one JSON file.
type Row struct {
	// Section names the path measured: "local", later e.g. "k8s-runc",
	// "k8s-gvisor", "kwok".
	Section string `json:"section"`
	Figure  string `json:"figure"`
	// Kind is "latency" (P50/P99 in Unit, lower is better) or "rate"
	// (Value in Unit, higher is better; P50/P99 for file transfers are the
	// rate at the median and at the 99th-percentile transfer time); "count"
	// and "memory" are one value in P50 (lower is better).
	Kind string `json:"kind"`
	Unit string `json:"unit"`
	// P50 is the median over runs of each run's p50; P99 the 99th
	// percentile of all runs' samples pooled (what a p99 target is judged
	// on: one run's bad tail counts); P99OfRuns the median of the per-run
	// p99s, shown beside it. NaN when the row has no samples (JSON null).
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	P99OfRuns float64 `json:"p99_median_of_runs"`
	// Samples is how many measurements the figure rests on, over Runs runs.
	Samples int       `json:"samples"`
	Runs    int       `json:"runs"`
	PerRun  []RunStat `json:"per_run"`
	Target  string    `json:"target,omitempty"`
	// Met is nil when the figure has no target on this path.
	Met *bool `json:"met,omitempty"`
	// Missing: the row has a target and no samples (a phase that did not
	// run or failed); it is not met.
	Missing bool `json:"missing,omitempty"`
	// LeftOut answers were measured but are not in the figure, for the
	// reason LeftOutWhat names ("cold": a warm claim came back cold).
	LeftOut     int    `json:"left_out,omitempty"`
	LeftOutWhat string `json:"left_out_what,omitempty"`
	Note        string `json:"note,omitempty"`
}

// jsonNum is v for the JSON, nil (null) for NaN, which JSON cannot hold.
func jsonNum(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// MarshalJSON writes a figure without samples as null, never as 0.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		P50       *float64 `json:"p50"`
		P99       *float64 `json:"p99"`
		P99OfRuns *float64 `json:"p99_median_of_runs"`
	}{plain(r), jsonNum(r.P50), jsonNum(r.P99), jsonNum(r.P99OfRuns)})
}

// MarshalJSON: as Row's.
func (s RunStat) MarshalJSON() ([]byte, error) {
	type plain RunStat
	return json.Marshal(struct {
		plain
		P50   *float64 `json:"p50"`
		P99   *float64 `json:"p99,omitempty"`
		Value *float64 `json:"value,omitempty"`
	}{plain(s), jsonNum(s.P50), omitZero(s.P99), omitZero(s.Value)})
}

func omitZero(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return jsonNum(v)
}

// Report is the whole output of one `go run ./bench`.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Command  string    `json:"command"`
	Machine  Machine   `json:"machine"`
	Params   any       `json:"params"`
	Rows     []Row     `json:"rows"`
	// Outcomes: what became of each requested suite.
	Outcomes []suiteOutcome `json:"outcomes"`
	Notes    []string       `json:"notes,omitempty"`
}

// Machine describes where the figures came from.
type Machine struct {
	CPUs       int    `json:"cpus"`
	Model      string `json:"model"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	Limits     string `json:"limits,omitempty"`
}

func fmtNum(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	switch {
	case unit == "ms" && v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case unit == "ms":
		return fmt.Sprintf("%.1f ms", v)
	case unit == "writes" || unit == "MiB":
		return fmt.Sprintf("%.1f %s", v, unit)
	case v >= 1000:
		return fmt.Sprintf("%s %s", thousands(int64(math.Round(v))), unit)
	default:
		return fmt.Sprintf("%.0f %s", v, unit)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Markdown renders the table: figure | p50 | p99 | p99, median of runs |
// samples | target | met? (cells: rowCells).
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("| figure | p50 | p99 (all runs pooled) | p99, median of runs | samples | target | met? |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|:---:|\n")
	for _, row := range r.Rows {
		c := rowCells(row)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			row.Section+": "+row.Figure, c.p50, c.p99, c.p99OfRuns, c.samples, c.target, c.met)
	}
	return b.String()
}

// WriteJSON writes the report to dir/bench-<time>.json and dir/latest.json.
func (r *Report) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	name := filepath.Join(dir, "bench-"+r.Started.UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(dir, "latest.json"), b, 0o644)
}

func boolp(b bool) *bool { return &b }
