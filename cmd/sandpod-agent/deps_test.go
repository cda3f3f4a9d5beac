package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the module paths of what only the full sandpod binary
// needs: the Kubernetes client, the HTTP gateway, the store, the CLI.
var forbidden = []string{"k8s.io/", "sigs.k8s.io/", "github.com/grpc-ecosystem/grpc-gateway", "go.etcd.io/bbolt", "github.com/spf13/cobra"}

// forbiddenDeps returns the packages of deps under a forbidden path.
func forbiddenDeps(deps []string) []string {
	var bad []string
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				bad = append(bad, d)
			}
		}
	}
	return bad
}

func TestForbiddenDeps(t *testing.T) {
	for name, tc := range map[string]struct {
		deps []string
		bad  int
	}{
		"std and grpc":     {deps: []string{"fmt", "google.golang.org/grpc", "github.com/sandpod/sandpod/core/agent"}},
		"client-go":        {deps: []string{"fmt", "k8s.io/client-go/kubernetes"}, bad: 1},
		"controller-rt":    {deps: []string{"sigs.k8s.io/controller-runtime"}, bad: 1},
		"gateway v2":       {deps: []string{"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"}, bad: 1},
		"bbolt and cobra":  {deps: []string{"go.etcd.io/bbolt", "github.com/spf13/cobra"}, bad: 2},
		"a look-alike std": {deps: []string{"k8sio/x"}},
	} {
		if got := forbiddenDeps(tc.deps); len(got) != tc.bad {
			t.Errorf("%s: forbiddenDeps = %v, want %d", name, got, tc.bad)
		}
	}
}

// The small agent is built from core/agent and what it imports, and none
// of the full binary's heavy dependencies: what would make it as large, and
// as costly to start and keep idle, as `sandpod agent`.
func TestAgentDependenciesExcludeTheFullBinarys(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !contains(deps, "github.com/sandpod/sandpod/core/agent") {
		t.Fatalf("go list -deps gave %d packages without core/agent: %q", len(deps), out)
	}
	if bad := forbiddenDeps(deps); len(bad) > 0 {
		t.Errorf("cmd/sandpod-agent depends on %v", bad)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
