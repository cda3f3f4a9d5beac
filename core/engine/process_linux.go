package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// process is the init of a running sandbox: PID 1 of its PID namespace.
// Killing it ends every process of the sandbox (the kernel kills the whole
// namespace), which is how suspend and delete stop a sandbox.
type process struct {
	pid   int
	start uint64
	// done closes when the process has exited.
	done chan struct{}
	// exit describes how it ended, once done is closed.
	exit string
	// cg is the cgroup this start of the sandbox runs in (nil when limits
	// are off, or for a process adopted after a restart).
	cg *cgroup
}

// releaseCgroup removes the process's own cgroup once it has exited. Only
// its own: a new start of the same sandbox may already have made the next.
func (p *process) releaseCgroup() {
	if p.cg != nil {
		_ = p.cg.remove()
	}
}

// launch describes one start of a sandbox's init.
type launch struct {
	exe      string
	name     string
	workDir  string
	socket   string
	logPath  string
	secret   string
	hide     string
	spec     runSpec
	cgroup   *cgroup
	setupPID func(pid int, start uint64) error // persists the PID before the gate opens
}

// startProcess starts `sandpod agent` as the init of new user, PID, mount,
// UTS and IPC namespaces (and network, when isolated). The engine binds the
// agent's Unix socket itself and passes it in, so the socket is accepting
// before the agent runs and stays reachable from the host whatever the
// sandbox's mount namespace looks like.
func startProcess(l launch) (*process, error) {
	_ = os.Remove(l.socket)
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: l.socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", l.socket, err)
	}
	lis.SetUnlinkOnClose(false)
	lisFile, err := lis.File()
	lis.Close()
	if err != nil {
		return nil, err
	}
	defer lisFile.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer gateR.Close()
	defer gateW.Close()
	logFile, err := os.OpenFile(l.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	args := []string{"agent", "--sandbox", l.name, "--root", l.workDir, "--listen", "fd://3", "--gate-fd", "4", "--isolate", "--hide", l.hide}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC)
	if l.spec.NetIsolated {
		args = append(args, "--net-isolated")
		flags |= unix.CLONE_NEWNET
	}
	if len(l.spec.Command) > 0 {
		args = append(append(args, "--"), l.spec.Command...)
	}
	cmd := exec.Command(l.exe, args...)
	cmd.Dir = l.workDir
	cmd.Env = sandboxEnv(l.workDir, l.spec.Env)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{lisFile, gateR}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: flags,
		// The sandbox's root is the engine's own user: no privilege beyond
		// the engine's, and files in the work directory stay the engine's.
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		// Its own session: a sandbox outlives a restart of the engine and
		// never receives the engine's terminal signals.
		Setsid:    true,
		Pdeathsig: 0,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sandbox init: %w", err)
	}
	p := &process{pid: cmd.Process.Pid, done: make(chan struct{}), cg: l.cgroup}
	p.start, _ = processStart(p.pid)
	go func() {
		err := cmd.Wait()
		p.exit = describeExit(cmd.ProcessState, err)
		close(p.done)
	}()
	fail := func(err error) (*process, error) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		<-p.done
		p.releaseCgroup()
		return nil, err
	}
	if err := l.setupPID(p.pid, p.start); err != nil {
		return fail(err)
	}
	if l.cgroup != nil {
		if err := l.cgroup.add(p.pid); err != nil {
			return fail(fmt.Errorf("cgroup: %w", err))
		}
	}
	// Open the gate: init starts the agent only now, inside its cgroups.
	if _, err := gateW.Write([]byte(l.secret)); err != nil {
		return fail(fmt.Errorf("open gate: %w", err))
	}
	return p, nil
}

// adoptProcess finds a sandbox init started by an earlier engine, if it is
// still the same process (same PID and start time).
func adoptProcess(pid int, start uint64) *process {
	if pid <= 0 {
		return nil
	}
	got, err := processStart(pid)
	if err != nil || got != start {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	p := &process{pid: pid, start: start, done: make(chan struct{})}
	go func() {
		defer unix.Close(fd)
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, -1); err == unix.EINTR {
				continue
			}
			break
		}
		p.exit = "exited (exit status unknown: it started before the engine restarted)"
		close(p.done)
	}()
	return p
}

// kill ends the sandbox's whole process tree and waits until it is gone.
func (p *process) kill(timeout time.Duration) error {
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("sandbox init %d did not exit within %s", p.pid, timeout)
	}
}

// processStart reads a process's start time (clock ticks since boot), the
// 22nd field of /proc/PID/stat.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("bad stat for %d", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("bad stat for %d", pid)
	}
	if f[0] == "Z" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func describeExit(ps *os.ProcessState, err error) string {
	if ps == nil {
		return fmt.Sprintf("could not wait: %v", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exited with code " + strconv.Itoa(ps.ExitCode())
}

// sandboxEnv is the environment of a sandbox's processes.
func sandboxEnv(workDir string, extra map[string]string) []string {
	env := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": workDir,
		"LANG": "C.UTF-8",
		"TERM": "xterm",
	}
	if p := os.Getenv("PATH"); p != "" {
		env["PATH"] = p // the host's tools, e.g. a python3 outside /usr/bin
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// socketDir is where agent sockets live: short (sun_path holds 108 bytes),
// stable for a state directory so a restarted engine finds its sockets.
func socketDir(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return filepath.Join(os.TempDir(), "sandpod-"+hex.EncodeToString(sum[:6]))
}
