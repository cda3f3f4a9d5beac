package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBenchImportsNoTests: the bench is one home (bench/ and the packages
// under it, their tests included) that imports nothing under tests/, so a
// test suite's helpers cannot change a measurement, and the suites can
// change without the bench. What both need lives outside tests/
// (hack/kube/harness, hack/fixtures).
func TestBenchImportsNoTests(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "github.com/sandpod/sandpod/bench/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/sandpod/sandpod/tests/") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("bench/... imports test packages: %v", bad)
	}
}
