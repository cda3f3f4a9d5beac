package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

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

func TestCLILifecycle(t *testing.T) {
	srv := startServer(t, "")
	c := newCLI(t, srv.Addr())

	sb := decodeJSON[cliSandbox](t, c.ok("claim", "python", "-o", "json", "-l", "team=cli", "--ttl", "30m"))
	if sb.Name == "" || sb.Phase != "Running" || sb.Labels["team"] != "cli" || sb.Warm == nil || !sb.Claimed {
		t.Fatalf("claim -o json: %+v", sb)
	}
	name := sb.Name

	t.Run("ls", func(t *testing.T) {
		if out := c.ok("ls"); !strings.Contains(out, "NAME") || !strings.Contains(out, name) || !strings.Contains(out, "Running") {
			t.Fatalf("ls table:\n%s", out)
		}
		list := decodeJSON[struct{ Sandboxes []cliSandbox }](t, c.ok("ls", "-o", "json"))
		if len(list.Sandboxes) != 1 || list.Sandboxes[0].Name != name {
			t.Fatalf("ls -o json: %+v", list)
		}
		if out := c.ok("ls", "-l", "team=cli", "-o", "name"); out != name+"\n" {
			t.Fatalf("ls -l team=cli -o name: %q", out)
		}
		if out := c.ok("ls", "--phase", "suspended", "-o", "name"); out != "" {
			t.Fatalf("ls --phase suspended: %q", out)
		}
		// The pool's unclaimed members show with --all only.
		if out := c.ok("ls", "--all", "-o", "name"); strings.Count(out, "\n") < 2 {
			t.Fatalf("ls --all lists no pool members:\n%s", out)
		}
		if out := c.ok("get", name, "-o", "yaml"); !strings.Contains(out, "name: "+name) || !strings.Contains(out, "phase: Running") {
			t.Fatalf("get -o yaml:\n%s", out)
		}
	})

	t.Run("exec passes the exit code through", func(t *testing.T) {
		r := c.run("exec", name, "--", "sh", "-c", "echo out; echo err >&2; exit 7")
		if r.code != 7 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err") {
			t.Fatalf("exec: %+v", r)
		}
		if r := c.runIn("hello from stdin", nil, "exec", name, "--", "cat"); r.code != 0 || r.stdout != "hello from stdin" {
			t.Fatalf("exec with stdin: %+v", r)
		}
		if out := c.ok("exec", "-w", "/tmp", "-e", "GREETING=hi", name, "--", "sh", "-c", "echo $PWD $GREETING"); out != "/tmp hi\n" {
			t.Fatalf("exec -w -e: %q", out)
		}
		c.run("exec", "--timeout", "1s", name, "--", "sleep", "60").want(t, 124, "timed out")
		c.run("exec", name, "--", "sh", "-c", "kill -KILL $$").want(t, 128+9, "signal 9")
		c.run("exec", name, "--", "no-such-program").want(t, 127)
	})

	t.Run("cp both ways with a directory", func(t *testing.T) {
		src := filepath.Join(c.home, "project")
		files := map[string]string{"a.txt": "alpha\n", "sub/b.sh": "#!/bin/sh\necho b\n", "sub/deeper/c.bin": strings.Repeat("\x00\x01binary", 50000)}
		for p, data := range files {
			full := filepath.Join(src, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(filepath.Join(src, "sub/b.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
		c.ok("cp", "./project", name+":/workspace/dir")
		if out := c.ok("exec", name, "--", "sh", "/workspace/dir/sub/b.sh"); out != "b\n" {
			t.Fatalf("the copied script says %q", out)
		}
		if out := c.ok("exec", name, "--", "cat", "dir/a.txt"); out != "alpha\n" {
			t.Fatalf("dir/a.txt holds %q", out)
		}
		// Into an existing directory: under its own name.
		c.ok("cp", "./project", name+":/workspace/dir")
		if out := c.ok("exec", name, "--", "cat", "/workspace/dir/project/a.txt"); out != "alpha\n" {
			t.Fatalf("dir/project/a.txt holds %q", out)
		}

		c.ok("cp", name+":/workspace/dir", "./back")
		for p, data := range files {
			got, err := os.ReadFile(filepath.Join(c.home, "back", p))
			if err != nil || string(got) != data {
				t.Fatalf("back/%s: %v (%d bytes, want %d)", p, err, len(got), len(data))
			}
		}
		if st, err := os.Stat(filepath.Join(c.home, "back/sub/b.sh")); err != nil || st.Mode().Perm() != 0o755 {
			t.Fatalf("back/sub/b.sh: %v %v, want mode 0755", st.Mode(), err)
		}
		if _, err := os.Stat(filepath.Join(c.home, "back/project/sub/deeper/c.bin")); err != nil {
			t.Fatalf("the nested copy did not come back: %v", err)
		}

		// One file into a local directory, and - for stdin and stdout.
		c.ok("cp", name+":dir/a.txt", ".")
		if got, _ := os.ReadFile(filepath.Join(c.home, "a.txt")); string(got) != "alpha\n" {
			t.Fatalf("a.txt copied into . holds %q", got)
		}
		if r := c.runIn("piped\n", nil, "cp", "-", name+":notes/piped.txt"); r.code != 0 {
			t.Fatalf("cp - : %+v", r)
		}
		if out := c.ok("cp", name+":notes/piped.txt", "-"); out != "piped\n" {
			t.Fatalf("cp to - printed %q", out)
		}
	})

	t.Run("extend", func(t *testing.T) {
		before := time.Now()
		got := decodeJSON[cliSandbox](t, c.ok("extend", name, "2h", "-o", "json"))
		if got.ShutdownTime.Before(before.Add(2*time.Hour-time.Minute)) || got.ShutdownTime.After(time.Now().Add(2*time.Hour+time.Minute)) {
			t.Fatalf("extend 2h: shutdown time %v", got.ShutdownTime)
		}
	})

	t.Run("suspend and resume keep the files", func(t *testing.T) {
		if got := decodeJSON[cliSandbox](t, c.ok("suspend", name, "-o", "json")); got.Phase != "Suspended" {
			t.Fatalf("suspend: phase %s", got.Phase)
		}
		if out := c.ok("ls", "--phase", "suspended", "-o", "name"); out != name+"\n" {
			t.Fatalf("ls --phase suspended: %q", out)
		}
		if got := decodeJSON[cliSandbox](t, c.ok("resume", name, "-o", "json")); got.Phase != "Running" {
			t.Fatalf("resume: phase %s", got.Phase)
		}
		if out := c.ok("exec", name, "--", "cat", "dir/a.txt"); out != "alpha\n" {
			t.Fatalf("after resume dir/a.txt holds %q", out)
		}
	})

	t.Run("shell keeps its state from line to line", func(t *testing.T) {
		script := "cd /tmp\nX=41\nfor i in 1 2\ndo echo i=$i\ndone\necho $PWD $((X+1))\ncat\nfi\necho still here\nexit 5\necho never\n"
		r := c.runIn(script, nil, "shell", name)
		if r.code != 5 {
			t.Fatalf("shell: exit %d, want 5 (from exit 5)\n%+v", r.code, r)
		}
		if r.stdout != "i=1\ni=2\n/tmp 42\nstill here\n" {
			t.Fatalf("shell printed %q", r.stdout)
		}
		if !strings.Contains(r.stderr, `"fi" unexpected`) {
			t.Fatalf("a syntax error is not shown: %q", r.stderr)
		}
		// The end of the input ends the shell with the last status.
		if r := c.runIn("false\n", nil, "shell", name); r.code != 1 {
			t.Fatalf("shell ending after false: exit %d", r.code)
		}
	})

	t.Run("rm", func(t *testing.T) {
		if out := c.ok("rm", name); out != "deleted "+name+"\n" {
			t.Fatalf("rm printed %q", out)
		}
		c.run("get", name).want(t, 67, "SANDBOX_NOT_FOUND")
		c.ok("rm", "--ignore-not-found", name)
	})
}

// manualTemplate has no pool and does not resume by itself; talker has a
// main program that writes to the sandbox's log.
const manualTemplate = `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: manual
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: talker
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
        command: ["sh", "-c", "echo main program says hi; exec sleep 100000"]
`

func TestCLIBadInput(t *testing.T) {
	srv := startServer(t, defaultConfig+manualTemplate)
	c := newCLI(t, srv.Addr())
	name := decodeJSON[cliSandbox](t, c.ok("claim", "python", "-o", "json")).Name
	manual := decodeJSON[cliSandbox](t, c.ok("claim", "manual", "-o", "json")).Name
	c.ok("suspend", manual)

	for _, tc := range []struct {
		args  []string
		code  int
		parts []string
	}{
		{[]string{"get", "nope"}, 67, []string{`"nope" not found`, "SANDBOX_NOT_FOUND"}},
		{[]string{"exec", "nope", "--", "true"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"suspend", "nope"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"extend", "nope", "1h"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"rm", "nope"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"expose", "nope", "8080"}, 67, []string{"expose", "SANDBOX_NOT_FOUND"}},
		{[]string{"logs", "nope"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"claim", "no-such-template"}, 67, []string{"no-such-template"}},
		{[]string{"exec", manual, "--", "true"}, 68, []string{"failed precondition", "suspended"}},
		{[]string{"claim", "python", "--wait", "1ms"}, 124, []string{"no ready sandbox of python within 1ms"}},
		{[]string{"extend", name, "soon"}, 2, []string{`"soon" is not a duration`}},
		{[]string{"extend", name, "0s"}, 2, []string{"must be positive"}},
		{[]string{"claim", "python", "--ttl", "forever"}, 2, []string{"--ttl"}},
		{[]string{"expose", name, "0"}, 2, []string{"from 1 to 65535"}},
		{[]string{"expose", name, "65536"}, 2, []string{"from 1 to 65535"}},
		{[]string{"expose", name, "http"}, 2, []string{"from 1 to 65535"}},
		{[]string{"expose", name, "8080"}, 79, []string{"not available on this server"}},
		{[]string{"logs", name}, 79, []string{"no log call", "agent.log", "--state-dir"}},
		{[]string{"cp", "./missing.txt", name + ":x"}, 66, []string{"missing.txt", "no such file"}},
		{[]string{"cp", name + ":missing.txt", "./x"}, 67, []string{"FILE_NOT_FOUND"}},
		{[]string{"cp", "a", "b"}, 2, []string{"NAME:PATH"}},
		{[]string{"ls", "-o", "xml"}, 2, []string{`"xml"`}},
		{[]string{"ls", "-l", "team in (("}, 65, []string{"invalid argument", "label_selector"}},
		{[]string{"no-such-command"}, 2, []string{"unknown command"}},
		{[]string{"get"}, 2, []string{"NAME"}},
		{[]string{}, 2, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := c.run(tc.args...)
			r.want(t, tc.code, tc.parts...)
			if tc.code != 0 && tc.code != 1 && len(tc.parts) > 0 && !strings.HasPrefix(r.stderr, "sandpod: ") {
				t.Fatalf("the error line does not start with sandpod: %q", r.stderr)
			}
		})
	}

	t.Run("cp from a sandbox makes no links and writes through none", func(t *testing.T) {
		c.ok("exec", name, "--", "sh", "-c", "mkdir -p trap && echo data > trap/f && ln -s /etc trap/etc-link && ln -s /etc/passwd trap/passwd-link")
		r := c.run("cp", name+":trap", "./trap-copy")
		r.want(t, 0, "skipped the symbolic link trap/etc-link", "skipped the symbolic link trap/passwd-link")
		if got, err := os.ReadFile(filepath.Join(c.home, "trap-copy/f")); err != nil || string(got) != "data\n" {
			t.Fatalf("trap-copy/f: %q %v", got, err)
		}
		for _, l := range []string{"etc-link", "passwd-link"} {
			if _, err := os.Lstat(filepath.Join(c.home, "trap-copy", l)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("trap-copy/%s exists (%v)", l, err)
			}
		}
		// A link already on this machine where a file of the tree goes is
		// not written through.
		victim := filepath.Join(c.home, "victim")
		if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(c.home, "merge/trap"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(c.home, "merge/trap/f")); err != nil {
			t.Fatal(err)
		}
		c.run("cp", name+":trap", "./merge").want(t, 73, "merge/trap/f")
		if got, _ := os.ReadFile(victim); string(got) != "mine\n" {
			t.Fatalf("the file behind the link was overwritten: %q", got)
		}
	})

	t.Run("logs from the state directory", func(t *testing.T) {
		talker := decodeJSON[cliSandbox](t, c.ok("claim", "talker", "-o", "json")).Name
		eventually(t, "the main program's line in the log", func() bool {
			return strings.Contains(c.ok("logs", talker, "--state-dir", srv.StateDir()), "main program says hi")
		})
		c.run("logs", talker).want(t, 79, "--state-dir", "agent.log")
		c.run("logs", talker, "--state-dir", filepath.Join(c.home, "not-a-state-dir")).want(t, 66, "no log at")
	})

	t.Run("server not reachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nobody listens there now
		start := time.Now()
		r := c.run("--address", addr, "ls")
		r.want(t, 69, "no sandpod server at "+addr, "--address")
		// Fails fast: the client's connect timeout (3s), not its retry budget.
		if took := time.Since(start); took > 60*time.Second {
			t.Fatalf("took %s to give up", took)
		}
		if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("more than one line: %q", r.stderr)
		}
	})

	t.Run("config file that does not parse", func(t *testing.T) {
		bad := filepath.Join(c.home, "bad.yaml")
		if err := os.WriteFile(bad, []byte("adress: 127.0.0.1:1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.run("--config", bad, "ls").want(t, 78, `unknown field "adress"`)
		c.runIn("", []string{"SANDPOD_CONFIG=" + filepath.Join(c.home, "nope.yaml")}, "ls").want(t, 78, "nope.yaml", "SANDPOD_CONFIG")
	})
}

// TestCLIConfigPrecedence: flag > environment > config file > default, for
// the address and the token, against a server that requires a token.
func TestCLIConfigPrecedence(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Token: "right-token"})
	c := newCLI(t, "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	l.Close()

	cfgDir := filepath.Join(c.home, ".config", "sandpod")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeConfig := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The default file (~/.config/sandpod/config.yaml) is read without
	// being named.
	writeConfig(filepath.Join(cfgDir, "config.yaml"), "address: "+srv.Addr()+"\ntoken: right-token\n")
	if out := c.ok("pools", "-o", "name"); out != "python\n" {
		t.Fatalf("pools with the default config file: %q", out)
	}
	cfg := decodeJSON[struct {
		Address  string
		TokenSet bool
		Sources  map[string]string
	}](t, c.ok("config", "-o", "json"))
	if cfg.Address != srv.Addr() || !cfg.TokenSet || !strings.HasPrefix(cfg.Sources["address"], "config ") {
		t.Fatalf("config -o json: %+v", cfg)
	}

	// The environment beats the file...
	r := c.runIn("", []string{"SANDPOD_ADDRESS=" + deadAddr}, "ls")
	r.want(t, 69, deadAddr, "$SANDPOD_ADDRESS")
	c.runIn("", []string{"SANDPOD_TOKEN=wrong"}, "ls").want(t, 77, "$SANDPOD_TOKEN")
	// ...and the flag beats the environment.
	if r := c.runIn("", []string{"SANDPOD_ADDRESS=" + deadAddr, "SANDPOD_TOKEN=wrong"}, "--address", srv.Addr(), "--token", "right-token", "pools", "-o", "name"); r.code != 0 {
		t.Fatalf("flags over a wrong environment: %+v", r)
	}
	c.runIn("", []string{"SANDPOD_TOKEN=right-token"}, "--token", "wrong", "ls").want(t, 77, "flag --token")

	// $SANDPOD_CONFIG names another file, which replaces the default one.
	other := filepath.Join(c.home, "other.yaml")
	writeConfig(other, "address: "+deadAddr+"\n")
	c.runIn("", []string{"SANDPOD_CONFIG=" + other}, "ls").want(t, 69, deadAddr, "config "+other)
	// No token anywhere: the server says so.
	writeConfig(other, "address: "+srv.Addr()+"\n")
	c.runIn("", []string{"SANDPOD_CONFIG=" + other}, "ls").want(t, 77, "no token was given")
}

// TestCLIWatch: a live line per change, as JSON lines; Ctrl-C ends it
// with exit code 0.
func TestCLIWatch(t *testing.T) {
	srv := startServer(t, "")
	c := newCLI(t, srv.Addr())
	cmd := exec.Command(c.bin, "watch", "-o", "json")
	cmd.Env = c.environ(nil)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	events := make(chan struct {
		Type    string
		Sandbox cliSandbox
	}, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev struct {
				Type    string
				Sandbox cliSandbox
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				events <- ev
			}
		}
		close(events)
	}()
	waitFor := func(typ, name, phase string) {
		t.Helper()
		deadline := time.After(90 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("watch ended before %s %s; stderr: %s", typ, name, stderr.String())
				}
				if (typ == "" || ev.Type == typ) && ev.Sandbox.Name == name && (phase == "" || ev.Sandbox.Phase == phase) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s event for %s within 90s", typ, name)
			}
		}
	}
	// The claim shows on the watch as a change, or, when the watch
	// connects after it, in its first listing: either way the watch is
	// live from then on.
	name := decodeJSON[cliSandbox](t, c.ok("claim", "python", "-o", "json")).Name
	waitFor("", name, "")
	c.ok("suspend", name)
	waitFor("Modified", name, "Suspended")
	c.ok("rm", name)
	waitFor("Deleted", name, "")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 0) {
		t.Fatalf("watch after Ctrl-C: %v; stderr: %s", err, stderr.String())
	}
}

func TestCLICompletionAndServerCommands(t *testing.T) {
	srv := startServer(t, "")
	c := newCLI(t, srv.Addr())
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if out := c.ok("completion", sh); len(out) < 200 || !strings.Contains(out, "sandpod") {
			t.Fatalf("completion %s: %d bytes", sh, len(out))
		}
	}
	// Sandbox names complete from the server.
	name := decodeJSON[cliSandbox](t, c.ok("claim", "python", "-o", "json")).Name
	if out := c.ok("__complete", "exec", ""); !strings.Contains(out, name+"\n") {
		t.Fatalf("completing exec does not offer %s:\n%s", name, out)
	}
	if out := c.ok("__complete", "claim", ""); !strings.Contains(out, "python\n") {
		t.Fatalf("completing claim does not offer the template:\n%s", out)
	}
	if out := c.ok("templates", "-o", "name"); out != "python\n" {
		t.Fatalf("templates: %q", out)
	}

	// The server subcommands keep their own flags and exit codes.
	if out := c.ok("version"); !strings.HasPrefix(out, "sandpod ") {
		t.Fatalf("version: %q", out)
	}
	c.run("state").want(t, 2, "usage: sandpod state")
	c.run("serve", "--no-such-flag").want(t, 2, "flag provided but not defined")
	if r := c.run("state", "check", "--state-dir", filepath.Join(c.home, "fresh")); r.code != 0 || !strings.Contains(r.stdout, "serve starts on it") {
		t.Fatalf("state check: %+v", r)
	}
	if r := c.run("--help"); r.code != 0 || !strings.Contains(r.stdout, "serve") || !strings.Contains(r.stdout, "claim") {
		t.Fatalf("--help: %+v", r)
	}
}

// TestCLIDocsRun runs the shell blocks of docs/cli.md marked runnable, as
// a reader would type them, with sandpod on the PATH.
func TestCLIDocsRun(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(doc)
	for {
		i := strings.Index(rest, "<!-- runnable -->\n```sh\n")
		if i < 0 {
			break
		}
		rest = rest[i+len("<!-- runnable -->\n```sh\n"):]
		end := strings.Index(rest, "\n```")
		blocks = append(blocks, rest[:end+1])
		rest = rest[end:]
	}
	if len(blocks) == 0 {
		t.Fatal("docs/cli.md has no runnable block")
	}
	srv := startServer(t, "")
	c := newCLI(t, srv.Addr())
	binDir := t.TempDir()
	if err := os.Symlink(c.bin, filepath.Join(binDir, "sandpod")); err != nil {
		t.Fatal(err)
	}
	for i, block := range blocks {
		cmd := exec.Command("sh", "-e", "-c", block)
		cmd.Dir = c.home
		cmd.Env = append(c.environ(nil), "PATH="+binDir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("block %d: %v\n%s\n--- output:\n%s", i, err, block, out)
		}
		if i == 0 {
			for _, want := range []string{"42\n", "hi\n", "exit code 3\n", `print("hi")`} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("the quick start does not print %q:\n%s", want, out)
				}
			}
		}
	}
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

// TestCLICtrlC: Ctrl-C reaches the command in the sandbox (its trap
// runs), and in the shell it interrupts the running command only.
func TestCLICtrlC(t *testing.T) {
	srv := startServer(t, "")
	c := newCLI(t, srv.Addr())
	name := decodeJSON[cliSandbox](t, c.ok("claim", "python", "-o", "json")).Name

	cmd, lines, stderr := c.start("", "exec", name, "--", "sh", "-c", `trap 'echo got INT; exit 9' INT; echo ready; sleep 60; echo not interrupted`)
	awaitLine(t, lines, "ready")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	awaitLine(t, lines, "got INT")
	if code := exitCode(t, cmd); code != 9 {
		t.Fatalf("exec after Ctrl-C: exit %d, want the trap's 9; stderr: %s", code, stderr)
	}

	cmd, lines, stderr = c.start("echo ready; sleep 60; echo after sleep\necho next line\n", "shell", name)
	awaitLine(t, lines, "ready")
	// Ctrl-C until the sleep is interrupted: one that lands between the
	// echo and the sleep only runs the shell's trap. Between commands,
	// Ctrl-C does nothing in line mode.
	stop := make(chan struct{})
	go func() {
		for {
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	awaitLine(t, lines, "after sleep")
	close(stop)
	awaitLine(t, lines, "next line")
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("shell after Ctrl-C: exit %d; stderr: %s", code, stderr)
	}
}

// TestCLITLS: --tls-ca (or tlsCA: in the config file) turns TLS on with a
// private CA, for a loopback address too.
func TestCLITLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir, "cli")
	roots, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots)
	srv := testserver.Start(t, testserver.Options{
		ExtraArgs:   []string{"--tls-cert", certFile, "--tls-key", keyFile},
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool}))},
	})
	c := newCLI(t, srv.Addr())
	if out := c.ok("--tls-ca", certFile, "pools", "-o", "name"); out != "python\n" {
		t.Fatalf("pools over TLS: %q", out)
	}
	// Plaintext to a TLS server: the server is not reachable.
	c.run("pools").want(t, 69, srv.Addr())
	cfg := filepath.Join(c.home, "tls.yaml")
	if err := os.WriteFile(cfg, []byte("tlsCA: "+certFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("--config", cfg, "templates", "-o", "name"); out != "python\n" {
		t.Fatalf("templates with tlsCA in the config file: %q", out)
	}
	c.run("--tls-ca", cfg, "pools").want(t, 78, "no PEM certificate")
	c.run("--tls-ca", cfg, "--insecure", "pools").want(t, 2, "contradict")
}
