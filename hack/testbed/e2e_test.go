// Package testbed_test checks e2e.sh's own checks on sample runs, without
// a node bed: its functions are sourced and fed the logs of real runs
// (testdata: the suites run without a cluster, every test skipped).
package testbed_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	build     sync.Once
	skipcheck string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if skipcheck != "" {
		os.Remove(skipcheck)
	}
	os.Exit(code)
}

// e2e sources e2e.sh (its functions only) and runs script, with skipcheck
// built from this tree. It returns the output and whether script succeeded.
func e2e(t *testing.T, script string) (string, bool) {
	t.Helper()
	build.Do(func() {
		skipcheck = filepath.Join(os.TempDir(), fmt.Sprintf("sandpod-skipcheck-%d", os.Getpid()))
		if out, err := exec.Command("go", "build", "-o", skipcheck, "../test/skipcheck").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build skipcheck: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command("bash", "-c", "source ./e2e.sh\n"+script)
	cmd.Env = append(os.Environ(), "SKIPCHECK="+skipcheck)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), err == nil
}

func TestKubeconfigIsRequired(t *testing.T) {
	dir := t.TempDir()
	empty, full := filepath.Join(dir, "empty"), filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path string
		ok   bool
	}{
		"no path":      {"", false},
		"missing file": {filepath.Join(dir, "nope"), false},
		"empty file":   {empty, false},
		"a kubeconfig": {full, true},
	} {
		t.Run(name, func(t *testing.T) {
			out, ok := e2e(t, `need_kubeconfig "`+tc.path+`"`)
			if ok != tc.ok {
				t.Fatalf("need_kubeconfig %q: ok %v, want %v: %s", tc.path, ok, tc.ok, out)
			}
			if !ok && !strings.Contains(out, "would skip every test") {
				t.Errorf("no reason given: %q", out)
			}
		})
	}
}

// A Go suite that skipped fails, prints go test -v's log (with the --- SKIP
// lines) and keeps the JSON; one that passed passes.
func TestGoSuiteFailsOnSkips(t *testing.T) {
	jsonLog := filepath.Join(t.TempDir(), "go-test.json")
	out, ok := e2e(t, `go_suite `+jsonLog+` < testdata/e2e-no-cluster.json`)
	if ok {
		t.Fatalf("a run whose every test skipped passed:\n%s", out)
	}
	for _, want := range []string{"=== RUN   TestBridgeClaimRunsPythonInWarmPod", "--- SKIP: TestBridgeClaimRunsPythonInWarmPod",
		"ok  \tgithub.com/sandpod/sandpod/tests/e2e", "--- SKIP not allowed: github.com/sandpod/sandpod/tests/e2e TestHungOrDeadAgentIsRestarted: ",
		"SANDPOD_E2E_KUBECONFIG is not set"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(jsonLog); err != nil || !strings.Contains(string(b), `"Action":"skip"`) {
		t.Errorf("the JSON log was not kept: %v", err)
	}

	passed := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (1.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"ok  \tp\t1.0s\n"}
{"Action":"pass","Package":"p"}
`
	if out, ok := e2e(t, "go_suite "+jsonLog+" <<'EOF'\n"+passed+"EOF"); !ok {
		t.Fatalf("a passing run failed:\n%s", out)
	}
}

func TestPythonSuiteFailsOnSkips(t *testing.T) {
	out, ok := e2e(t, `py_suite testdata/e2e-python-no-cluster.xml`)
	if ok || !strings.Contains(out, "tests.e2e.python.test_bridge test_claim_from_warm_pool_runs_python") {
		t.Fatalf("a pytest run whose every test skipped: ok %v:\n%s", ok, out)
	}
}
