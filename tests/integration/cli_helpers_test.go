package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandpod/sandpod/tests/testserver"
)

// The CLI as a user runs it: the built binary against a real
// `sandpod serve`, its exit codes, its output parsed as a script would.

// cli runs sandpod with args; env replaces the SANDPOD_* variables.
type cli struct {
	t    *testing.T
	bin  string
	env  []string // KEY=VALUE added to a clean environment
	home string
}

func newCLI(t *testing.T, addr string) *cli {
	// A home of its own: a config file of the person running the tests
	// must not change what the CLI does.
	c := &cli{t: t, bin: testserver.Binary(t), home: t.TempDir()}
	if addr != "" {
		c.env = append(c.env, "SANDPOD_ADDRESS="+addr)
	}
	return c
}

type cliResult struct {
	stdout, stderr string
	code           int
}

func (c *cli) environ(extra []string) []string {
	env := []string{"HOME=" + c.home, "XDG_CONFIG_HOME=" + filepath.Join(c.home, ".config"), "PATH=" + os.Getenv("PATH")}
	env = append(env, c.env...)
	return append(env, extra...)
}

// runIn runs the CLI with stdin and extra environment.
func (c *cli) runIn(stdin string, extraEnv []string, args ...string) cliResult {
	c.t.Helper()
	cx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cx, c.bin, args...)
	cmd.Env = c.environ(extraEnv)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = c.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		c.t.Fatalf("sandpod %v: %v", args, err)
	}
	return cliResult{out.String(), errb.String(), code}
}

func (c *cli) run(args ...string) cliResult {
	c.t.Helper()
	return c.runIn("", nil, args...)
}

// ok runs the CLI and fails the test unless it exits 0.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("sandpod %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// want checks an exit code and that stderr holds one line mentioning each
// of parts.
func (r cliResult) want(t *testing.T, code int, parts ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, p := range parts {
		if !strings.Contains(r.stderr, p) {
			t.Fatalf("stderr does not mention %q:\n%s", p, r.stderr)
		}
	}
}

type cliSandbox struct {
	Name         string            `json:"name"`
	Namespace    string            `json:"namespace"`
	Phase        string            `json:"phase"`
	Labels       map[string]string `json:"labels"`
	ShutdownTime time.Time         `json:"shutdownTime"`
	Warm         *bool             `json:"warm"`
	Claimed      bool              `json:"claimed"`
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, s)
	}
	return v
}

// startCLI starts the CLI and returns its stdout as lines as they come.
func (c *cli) start(stdin string, args ...string) (*exec.Cmd, <-chan string, *bytes.Buffer) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.environ(nil)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines, &stderr
}

// awaitLine reads lines until want (failing after a generous deadline).
func awaitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %q", want)
			}
			if l == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within 90s", want)
		}
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(90 * time.Second):
		t.Fatal("the CLI did not end within 90s")
		return -1
	}
}
