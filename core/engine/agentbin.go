package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// agentCandidates lists, in order, where the agent binary may be: the flag
// (Config.AgentBinary), $SANDPOD_AGENT, then sandpod-agent beside the
// engine's binary, with the engine's own suffix (bin/sandpod-race runs
// bin/sandpod-agent-race). The engine's binary itself is the fallback
// (findAgent): `sandpod agent` takes the same arguments.
func agentCandidates(flag, env, executable string) []string {
	base := filepath.Base(executable)
	suffix := ""
	if rest, ok := strings.CutPrefix(base, "sandpod"); ok {
		suffix = rest
	}
	beside := filepath.Join(filepath.Dir(executable), "sandpod-agent"+suffix)
	return []string{flag, env, beside}
}

// findAgent returns the binary every sandbox runs as its init and agent
// (mounted read-only at agentPath), and whether it is the small
// cmd/sandpod-agent rather than the engine's whole binary. A flag naming
// no executable file is an error; the others are skipped when missing.
func findAgent(flag, executable string) (string, bool, error) {
	for i, p := range agentCandidates(flag, os.Getenv("SANDPOD_AGENT"), executable) {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			abs, err := filepath.Abs(p)
			return abs, true, err
		}
		if i == 0 {
			return "", false, fmt.Errorf("agent binary %s: not an executable file (build it with `make build`: bin/sandpod-agent)", p)
		}
	}
	return executable, false, nil
}
