// Package preflight checks that a cluster can run sandpod: `sandpod
// preflight` and the Job in deploy/preflight. Gathering the facts (gather.go,
// probe.go) talks to the cluster; deciding pass, warn or fail from them
// (checks.go) is pure, so table tests cover every decision.
package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Status is the outcome of one check.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	// Skip: not checked, because what it depends on failed (e.g. the API
	// server does not answer); that row says why.
	Skip Status = "skip"
)

// Result is one row of the report: what was checked, the outcome, what was
// found, and what to do when it is not a pass.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is every row of a run.
type Report struct {
	Results []Result `json:"results"`
}

// Failed says whether a check failed (or, with strict, warned).
func (r Report) Failed(strict bool) bool {
	for _, x := range r.Results {
		if x.Status == Fail || (strict && x.Status == Warn) {
			return true
		}
	}
	return false
}

// Counts is how many rows have each status.
func (r Report) Counts() map[Status]int {
	n := map[Status]int{}
	for _, x := range r.Results {
		n[x.Status]++
	}
	return n
}

// WriteTable prints the report as a table, each row that is not a pass
// followed by what to do, then a summary line.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", x.Check, strings.ToUpper(string(x.Status)), x.Detail)
		if x.Fix != "" && x.Status != Pass {
			fmt.Fprintf(tw, "\t\t-> %s\n", x.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := r.Counts()
	skipped := ""
	if n[Skip] > 0 {
		skipped = fmt.Sprintf(", %d skipped", n[Skip])
	}
	_, err := fmt.Fprintf(w, "\n%d passed, %d warned, %d failed%s\n", n[Pass], n[Warn], n[Fail], skipped)
	return err
}

// WriteJSON prints the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
