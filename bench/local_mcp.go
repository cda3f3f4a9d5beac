package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// MCP rows (issue 31): `sandpod mcp` driven by the official Python MCP
// client (bench/mcp_sessions.py) against the suite's server, beside the
// native Python client on the same server and under the same load.

// mcpSessions is how many MCP sessions run at once.
const mcpSessions = 32

type mcpSeries struct {
	runCommand, nativeExec, session, wall, gone series
}

// mcpPhase runs once per run, from a pool that holds a sandbox for every
// session (and the two of the round trips): the sessions' claims are warm,
// as sandpod's claims are meant to be, so the figures are sandpod's and
// the MCP server's, not 32 cold starts at once.
func (l *localSuite) mcpPhase(ctx context.Context) error {
	if _, err := os.Stat(benchPython); err != nil {
		l.skipped = append(l.skipped, fmt.Sprintf("sandpod mcp (Python mcp client): no Python at %s (make venv)", benchPython))
		return nil
	}
	if size := int32(mcpSessions + 2); size > int32(l.p.PoolSize) {
		if _, err := l.api.ScaleWarmPool(ctx, &sandpodv1.ScaleWarmPoolRequest{Name: pool, Replicas: size}); err != nil {
			return fmt.Errorf("scale the pool for the MCP sessions: %w", err)
		}
		defer func() {
			if _, err := l.api.ScaleWarmPool(context.WithoutCancel(ctx), &sandpodv1.ScaleWarmPoolRequest{Name: pool, Replicas: int32(l.p.PoolSize)}); err != nil {
				l.log("scale the pool back: %v", err)
			}
		}()
	}
	if err := l.waitPoolFull(ctx); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, benchPython, "bench/mcp_sessions.py", "--bin", l.s.bin, "--address", l.s.addr,
		"--template", template, "--calls", fmt.Sprint(l.p.Execs/2), "--sessions", fmt.Sprint(mcpSessions))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("mcp_sessions.py: %w", err)
	}
	var res struct {
		RunCommandMS []float64 `json:"run_command_ms"`
		NativeExecMS []float64 `json:"native_exec_ms"`
		SessionMS    []float64 `json:"session_ms"`
		WallMS       float64   `json:"sessions_wall_ms"`
		GoneMS       float64   `json:"sessions_gone_ms"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("mcp_sessions.py output %q: %w", out, err)
	}
	l.mcp.runCommand.addRun(res.RunCommandMS)
	l.mcp.nativeExec.addRun(res.NativeExecMS)
	l.mcp.session.addRun(res.SessionMS)
	l.mcp.wall.addRun([]float64{res.WallMS})
	l.mcp.gone.addRun([]float64{res.GoneMS})
	return nil
}

func (l *localSuite) mcpRows(lat func(string, *series, string, func(p50, p99 float64) bool, string) Row) []Row {
	sessions := fmt.Sprintf("%d concurrent MCP sessions over HTTP", mcpSessions)
	pool := fmt.Sprintf("from a full pool of %d", max(l.p.PoolSize, mcpSessions+2))
	return []Row{
		lat("MCP run_command `true` round trip (stdio, Python mcp client)", &l.mcp.runCommand, "", nil,
			"call_tool → parsed result on one `sandpod mcp` session over stdio (bench/mcp_sessions.py); alternates with the next row"),
		lat("exec round trip `true` (native Python client, beside the MCP row)", &l.mcp.nativeExec, "", nil,
			"sb.run(['true']) on a sandbox of the same template, right after each MCP call: the MCP hop's cost is the difference"),
		lat(sessions+": claim + run_command + end, per session", &l.mcp.session, "", nil,
			"one `sandpod mcp --listen`; connect (discover probe, initialize), run_command `true` (claims the session's sandbox), end (DELETE); "+pool),
		lat(sessions+": first connect → last end", &l.mcp.wall, "", nil, "one sample per run"),
		lat(sessions+": first connect → every sandbox deleted", &l.mcp.gone, "", nil,
			"the session's end deletes its sandbox; checked with the native client"),
	}
}
