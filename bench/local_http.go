package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// benchPython runs the Python figures (the venv of `make venv`).
const benchPython = ".venv/bin/python"

// httpClaims: warm claims over the HTTP/JSON API (serve --http-listen)
// from Python's httpx, timed inside the Python process
// (bench/http_claims.py), from a full pool.
func (l *localSuite) httpClaims(ctx context.Context) error {
	if _, err := os.Stat(benchPython); err != nil {
		l.skipped = append(l.skipped, fmt.Sprintf("warm claim over HTTP/JSON (Python httpx): no Python at %s (make venv)", benchPython))
		return nil
	}
	if err := l.waitPoolFull(ctx); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, benchPython, "bench/http_claims.py", "--url", "http://"+l.s.httpAddr,
		"--template", template, "--claims", fmt.Sprint(l.p.WarmClaims))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("http_claims.py: %w", err)
	}
	var res struct {
		WarmMS []float64 `json:"warm_ms"`
		GetMS  []float64 `json:"get_ms"`
		Cold   int       `json:"cold"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("http_claims.py output %q: %w", out, err)
	}
	l.httpWarm.addRun(res.WarmMS)
	l.httpGet.addRun(res.GetMS)
	l.httpCold += res.Cold
	return nil
}
