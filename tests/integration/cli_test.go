package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
