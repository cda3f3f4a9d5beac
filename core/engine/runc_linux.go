package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandpod/sandpod/core/engine/cgroups"
)

// runc drives the OCI runtime that isolates local sandboxes: runc, the
// reference implementation that Docker, containerd and Kubernetes use.
type runc struct {
	bin string
	// root is runc's own state directory (one per engine state directory).
	root string
	// noCgroups: runc is told to go on where it cannot make a container's
	// cgroups (--no-limits: the engine gives it none of its own).
	noCgroups bool
	// cgroups is where removals look for what runc left of a container's
	// cgroups (the host's layout, whether this engine applies limits or not).
	cgroups cgroups.Layout
}

// findRunc locates runc: the flag, $SANDPOD_RUNC, beside the engine's own
// binary (where `make build` links it), then $PATH.
func findRunc(flag, executable string) (string, error) {
	for _, p := range []string{flag, os.Getenv("SANDPOD_RUNC"), filepath.Join(filepath.Dir(executable), "runc")} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return filepath.Abs(p)
		}
		if p == flag {
			return "", fmt.Errorf("runc %s: not an executable file", p)
		}
	}
	if p, err := exec.LookPath("runc"); err == nil {
		return p, nil
	}
	return "", errors.New("runc not found: the local engine runs every sandbox under runc (user, PID, mount and network namespaces, seccomp); " +
		"`make build` builds it (hack/local/deps.sh), or install runc 1.2+ and put it on $PATH, or pass --runc PATH")
}

func (r runc) command(ctx context.Context, args ...string) *exec.Cmd {
	global := []string{"--root", r.root}
	if r.noCgroups {
		// runc's name for "ignore cgroup permission errors" (EPERM, EROFS,
		// EACCES) where the config names no cgroup path: it applies no
		// limits then. Nothing else of runc changes with it as root.
		global = append(global, "--rootless", "true")
	}
	return exec.CommandContext(ctx, r.bin, append(global, args...)...)
}

// do runs a short runc command, its output going into its error.
func (r runc) do(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := r.command(ctx, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("runc %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}

// writeBundle writes the container's config.json into dir.
func writeBundle(dir string, c containerSpec) error {
	b, err := json.MarshalIndent(ociSpec(c), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "config.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "config.json"))
}

// start runs the container detached: runc returns once the container's
// init (the agent) runs, with extra as its fds 3, 4, ... and stdout and
// stderr going to log. It returns the init's host PID.
func (r runc) start(ctx context.Context, id, bundle string, extra []*os.File, log *os.File) (int, error) {
	pidFile := filepath.Join(bundle, "init.pid")
	_ = os.Remove(pidFile)
	runcLog := filepath.Join(bundle, "runc.log")
	_ = os.Remove(runcLog)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := r.command(ctx, "--log", runcLog, "run", "--detach", "--bundle", bundle, "--pid-file", pidFile,
		"--preserve-fds", strconv.Itoa(len(extra)), id)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = extra
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(runcLog)
		return 0, fmt.Errorf("runc run: %w: %s", err, lastLines(msg, 3))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("runc run: no pid file: %w", err)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// remove deletes a container's runc state and cgroups, killing whatever
// still runs in it. A container runc does not know is not an error. A plain
// delete first: the engine has usually killed the init already, and
// --force costs 100 ms even then.
func (r runc) remove(id string) error {
	defer r.cgroups.Remove(id)
	if _, err := os.Stat(filepath.Join(r.root, id)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if r.do("delete", id) == nil {
		return nil
	}
	return r.do("delete", "--force", id)
}

// running reports whether a container's init is still alive.
func (r runc) running(id string) bool {
	switch r.status(id) {
	case "running", "created", "paused":
		return true
	}
	return false
}

// status is runc's status of a container ("running", "paused", ...), or ""
// when runc does not know it.
func (r runc) status(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := r.command(ctx, "state", id).Output()
	if err != nil {
		return ""
	}
	var st struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(out, &st) != nil {
		return ""
	}
	return st.Status
}

// removeAll removes every container whose name begins with prefix.
func (r runc) removeAll(prefix string) {
	for _, id := range r.list() {
		if strings.HasPrefix(id, prefix) {
			_ = r.remove(id)
		}
	}
}

// list names the containers in runc's state directory.
func (r runc) list() []string {
	entries, _ := os.ReadDir(r.root)
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("; ")))
}
