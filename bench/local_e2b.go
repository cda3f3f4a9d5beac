package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// e2bStats are the E2B SDK's figures and the native Python client's beside
// them, on the same server.
type e2bStats struct {
	e2bCycle, nativeCycle, e2bRun, nativeRun series
}

// e2bSDK: E2B's SDK against serve --e2b-listen, and sandpod's Python client
// on the same server, timed in Python (bench/e2b_sdk.py).
func (l *localSuite) e2bSDK(ctx context.Context) error {
	if _, err := os.Stat(benchPython); err != nil {
		l.skipped = append(l.skipped, fmt.Sprintf("E2B SDK figures: no Python at %s (make venv)", benchPython))
		return nil
	}
	if err := l.waitPoolFull(ctx); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, benchPython, "bench/e2b_sdk.py", "--e2b-url", "http://"+l.s.e2bAddr,
		"--address", l.s.addr, "--template", template)
	cmd.Env = append(os.Environ(), "PYTHONPATH=clients/python")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("e2b_sdk.py: %w", err)
	}
	var res struct {
		E2BCycle    []float64 `json:"e2b_cycle_ms"`
		NativeCycle []float64 `json:"native_cycle_ms"`
		E2BRun      []float64 `json:"e2b_run_ms"`
		NativeRun   []float64 `json:"native_run_ms"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("e2b_sdk.py output %q: %w", out, err)
	}
	l.e2b.e2bCycle.addRun(res.E2BCycle)
	l.e2b.nativeCycle.addRun(res.NativeCycle)
	l.e2b.e2bRun.addRun(res.E2BRun)
	l.e2b.nativeRun.addRun(res.NativeRun)
	return nil
}

// e2bRows are the E2B SDK's rows of the local suite.
func (l *localSuite) e2bRows(lat func(string, *series, string, func(p50, p99 float64) bool, string) Row) []Row {
	const via = "timed in Python, one at a time (bench/e2b_sdk.py); same server, same pool"
	return []Row{
		lat("E2B SDK: Sandbox.create + commands.run(\"true\") + kill", &l.e2b.e2bCycle, "", nil,
			"e2b 2.64.0 against --e2b-listen (docs/e2b.md), warm from the pool; "+via),
		lat("sandpod Python client: claim + run(\"true\") + delete", &l.e2b.nativeCycle, "", nil,
			"the same cycle over gRPC; "+via),
		lat("E2B SDK: commands.run(\"true\") round trip", &l.e2b.e2bRun, "", nil,
			"one sandbox; envd's process.Start over Connect RPC, then sandpod's Exec; "+via),
		lat("sandpod Python client: run(\"true\") round trip", &l.e2b.nativeRun, "", nil,
			"one sandbox, over gRPC; "+via),
	}
}
