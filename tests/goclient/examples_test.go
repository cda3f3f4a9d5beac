package goclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestExamples runs the examples of the client's package (the package
// documentation) against the shared server: they are in the client's own
// module, which cannot start a server, so they run there with the server's
// address in $SANDPOD_EXAMPLE_ADDRESS, and are skipped without it.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the client's tests")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err) // go test itself runs from one
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(testContext(t), goBin, "test", "-count=1", "-v", "-run", "^Example", ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "clients", "go")
	cmd.Env = append(os.Environ(), "SANDPOD_EXAMPLE_ADDRESS="+serverAddr, "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the examples fail: %v\n%s", err, out)
	}
	// Guard against the examples being skipped or not found: every one
	// must have run and passed.
	passed := strings.Count(string(out), "--- PASS: Example")
	if passed < 8 {
		t.Fatalf("%d examples passed, want at least 8:\n%s", passed, out)
	}
	t.Logf("%d examples passed", passed)
}
