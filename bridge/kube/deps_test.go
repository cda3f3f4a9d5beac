package kube

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoControllerDeps checks that the Kubernetes backend does not import
// the controller: what both need (the warm take, object names, the scheme)
// lives in core/adopt and with the API types, so the bridge cannot grow a
// second copy of a reconciler's logic or start one by accident.
func TestNoControllerDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sandpod/sandpod/bridge/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/sandpod/sandpod/core/controller" || strings.HasPrefix(p, "github.com/sandpod/sandpod/core/controller/") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("bridge/... depends on controller packages: %v", bad)
	}
}
