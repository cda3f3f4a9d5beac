package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAgentCandidates(t *testing.T) {
	for name, tc := range map[string]struct {
		flag, env, exe string
		want           []string
	}{
		"beside":          {exe: "/r/bin/sandpod", want: []string{"", "", "/r/bin/sandpod-agent"}},
		"race suffix":     {exe: "/r/bin/sandpod-race", want: []string{"", "", "/r/bin/sandpod-agent-race"}},
		"other name":      {exe: "/usr/local/bin/sp", want: []string{"", "", "/usr/local/bin/sandpod-agent"}},
		"flag, env first": {flag: "/a", env: "/b", exe: "/r/sandpod", want: []string{"/a", "/b", "/r/sandpod-agent"}},
	} {
		if got := agentCandidates(tc.flag, tc.env, tc.exe); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestFindAgent(t *testing.T) {
	t.Setenv("SANDPOD_AGENT", "")
	dir := t.TempDir()
	exe := filepath.Join(dir, "sandpod")
	if err := os.WriteFile(exe, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Without an agent beside it, the engine's binary runs `sandpod agent`.
	if got, small, err := findAgent("", exe); err != nil || small || got != exe {
		t.Fatalf("no agent: %q %v %v", got, small, err)
	}
	// A flag naming nothing runnable is refused, with what to do.
	if _, _, err := findAgent(filepath.Join(dir, "missing"), exe); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("missing flag: %v", err)
	}
	agent := filepath.Join(dir, "sandpod-agent")
	if err := os.WriteFile(agent, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, small, _ := findAgent("", exe); small || got != exe {
		t.Fatalf("a non-executable agent beside: %q %v", got, small)
	}
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, small, err := findAgent("", exe); err != nil || !small || got != agent {
		t.Fatalf("agent beside: %q %v %v", got, small, err)
	}
}
