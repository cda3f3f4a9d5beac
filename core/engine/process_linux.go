package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpod/sandpod/core/engine/cgroups"
)

// process is the init of a running sandbox: PID 1 of its PID namespace.
// Killing it ends every process of the sandbox (the kernel kills the whole
// namespace), which is how suspend and delete stop a sandbox.
type process struct {
	pid   int
	start uint64
	// pidfd refers to this very process (-1 where pidfd_open is missing):
	// signals go through it, so a PID the kernel handed to another
	// process after this one exited is never signalled. sigMu guards it.
	pidfd int
	sigMu sync.Mutex
	// done closes when the process has exited.
	done chan struct{}
	// exit describes how it ended, once done is closed.
	exit string
	// runc and id name the container, whose state and cgroups release
	// removes once the process has exited.
	runc runc
	id   string
	// network delivers the result of attaching the sandbox's user-mode
	// network (nil: none to wait for).
	network chan error

	// cgroup is the container's cgroup (none when runc chose it: pause
	// then goes through runc). freezeMu orders freeze, thaw and kill;
	// frozen is what the last of them left; killing is set once kill began
	// (nothing freezes it again then).
	cgroup   cgroups.Container
	freezeMu sync.Mutex
	frozen   bool
	killing  bool

	// respawn is the engine's end of the init's respawn pipe (nil: not
	// started with a swappable workspace, or adopted after a restart): a
	// restore in place asks the init for a new agent through it.
	respawn *os.File
}

// release removes the container's runc state and cgroups once its init
// has exited.
func (p *process) release() {
	if p.respawn != nil {
		_ = p.respawn.Close()
	}
	if p.id != "" {
		_ = p.runc.remove(p.id)
	}
}

// launch describes one start of a sandbox's init.
type launch struct {
	ctx       context.Context // ends the start (runc is killed)
	runc      runc
	id        string // the container's name in runc's state
	bundle    string // where its config.json goes
	container containerSpec
	socket    string
	logPath   string
	secret    string
	// egress attaches a user-mode network (pasta) to the sandbox's own
	// network namespace; without it the sandbox has loopback only.
	egress   bool
	setupPID func(pid int, start uint64) error // persists the PID before the gate opens
	// cgroups is where the engine makes the container's cgroup and
	// writes limits into before runc runs it; cgroup is that cgroup as
	// the process uses it (see Engine.containerCgroup).
	cgroups cgroups.Layout
	limits  cgroups.Limits
	cgroup  cgroups.Container
	// userns is the sandbox's user namespace, being made (userns_linux.go).
	userns *pendingUserNS
	// swapBase, when set, is where the container's /workspace is bound
	// from (swap_linux.go): the workspace overlay (container.WorkDir's
	// overlay, at workspace) is bound onto it before the gate opens, and
	// the init gets a respawn pipe.
	swapBase, workspace string
}

// startProcess starts `sandpod agent` as the init of a runc container (see
// ociSpec). The engine binds the agent's Unix socket itself and passes it
// in, so the socket is accepting before the agent runs and stays reachable
// from the host, and no path to it exists inside the sandbox. The secret
// goes through a pipe (the gate) once the PID is on record: an engine that
// dies before that closes the gate, and the init exits without starting.
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

	c := l.container
	args := []string{"agent", "--sandbox", c.Hostname, "--root", WorkspaceDir,
		"--listen", "fd://3", "--gate-fd", "4", "--run-as", runAsArg(c.RunAsUID, c.RunAsGID)}
	extra := []*os.File{lisFile, gateR}
	var respawnW *os.File
	if l.swapBase != "" {
		respawnR, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer respawnR.Close()
		respawnW = w
		extra = append(extra, respawnR)
		args = append(args, "--respawn-fd", "5")
	}
	// The lifeline: the init holds its write end for its life, pasta's
	// keeper waits on the read end (see attachNetwork).
	var lifeR *os.File
	if l.egress {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer w.Close()
		lifeR = r
		defer func() {
			if lifeR != nil {
				lifeR.Close()
			}
		}()
		args = append(args, "--lifeline-fd", strconv.Itoa(3+len(extra)))
		extra = append(extra, w)
	}
	c.AgentArgs = append(args, c.AgentArgs...)
	userns, err := l.userns.wait() // its holder ends after the start (launch)
	if err != nil {
		if respawnW != nil {
			respawnW.Close()
		}
		return nil, err
	}
	c.UserNS = userns.path()
	if err := writeBundle(l.bundle, c); err != nil {
		if respawnW != nil {
			respawnW.Close()
		}
		return nil, fmt.Errorf("write runc bundle: %w", err)
	}
	if err := l.cgroups.PrepareContainer(l.id, l.limits); err != nil {
		if respawnW != nil {
			respawnW.Close()
		}
		return nil, err
	}
	pid, err := l.runc.start(l.ctx, l.id, l.bundle, extra, logFile)
	if err != nil {
		if respawnW != nil {
			respawnW.Close()
		}
		_ = l.runc.remove(l.id)
		return nil, err
	}
	// The init is this engine's child (a subreaper inherits it from runc)
	// and only reap() reaps it, so the PID still names it here.
	p := &process{pid: pid, pidfd: openPidfd(pid), done: make(chan struct{}), runc: l.runc, id: l.id, cgroup: l.cgroup, respawn: respawnW}
	p.start, _ = processStart(pid)
	go p.reap()
	fail := func(err error) (*process, error) {
		_ = p.kill(10 * time.Second)
		p.release()
		return nil, err
	}
	if err := l.setupPID(p.pid, p.start); err != nil {
		return fail(err)
	}
	// Before anything of the sandbox runs (and pasta): its sockets' queues
	// are charged to it (sockmem_linux.go).
	if l.cgroups.Usable() {
		if err := l.cgroups.LimitSocketMemory(l.id, cgroups.SocketMemoryLimit(l.limits.MemoryBytes, cgroups.HostTCPMemMax())); err != nil {
			return fail(err)
		}
	}
	// The workspace goes in now that the container exists: the bind
	// propagates into it (swap_linux.go); before the gate opens, so the
	// agent starts on it.
	if l.swapBase != "" {
		if err := attachWorkspace(l.workspace, l.swapBase); err != nil {
			return fail(err)
		}
	}
	// Open the gate: init starts the agent only now.
	if _, err := gateW.Write([]byte(l.secret)); err != nil {
		return fail(fmt.Errorf("open gate: %w", err))
	}
	// The network comes up while the agent starts; the sandbox is handed
	// out only once both are ready (see networkReady).
	if l.egress {
		p.network = make(chan error, 1)
		log, err := os.OpenFile(l.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fail(err)
		}
		life := lifeR
		lifeR = nil // attachNetwork's to close
		go func() {
			defer log.Close()
			defer life.Close()
			p.network <- attachNetwork(pid, l.container.IDBase, l.cgroups.AccountingProcs(l.id), life, log)
		}()
	}
	return p, nil
}

// networkReady waits until the sandbox's network is set up (at once for a
// sandbox without egress, or one adopted after a restart).
func (p *process) networkReady(ctx context.Context) error {
	if p.network == nil {
		return nil
	}
	select {
	case err := <-p.network:
		p.network <- err // for a later caller
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// adoptProcess finds a sandbox init started by an earlier engine, if it is
// still the same process (same PID and start time).
func adoptProcess(rt runc, id string, cgroup cgroups.Container, pid int, start uint64) *process {
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
	// The start time was read before the pidfd was opened: read again, so
	// the pidfd is known to name the process that start time belongs to.
	if got, err := processStart(pid); err != nil || got != start {
		_ = unix.Close(fd)
		return nil
	}
	// Signals go through a copy of the pidfd checked above: a pidfd opened
	// again by PID could name a process that took the PID after this one
	// exited (the engine is not its parent, so nothing holds the PID).
	sigfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		_ = unix.Close(fd)
		return nil
	}
	p := &process{pid: pid, pidfd: sigfd, start: start, done: make(chan struct{}), runc: rt, id: id, cgroup: cgroup}
	go p.wait(fd, "exited (exit status unknown: it started before the engine restarted)")
	return p
}

// openPidfd opens a pidfd for pid, or returns -1 (kernels before 5.3).
func openPidfd(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// signal sends sig to the init unless it has exited: through its pidfd,
// or, without one, by PID while done is still open (an exited init's PID
// may already be another process's).
func (p *process) signal(sig syscall.Signal) {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, sig, nil, 0)
		return
	}
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(p.pid, sig)
	}
}

// exited closes done once the init is gone, and its pidfd with it.
func (p *process) exited(how string) {
	p.sigMu.Lock()
	p.exit = how
	if p.pidfd >= 0 {
		_ = unix.Close(p.pidfd)
		p.pidfd = -1
	}
	close(p.done)
	p.sigMu.Unlock()
}

// reap waits for an init this engine started. runc run --detach leaves
// it an orphan, and the engine, a child subreaper (see becomeSubreaper),
// inherits it: so the engine reaps it and knows how it ended.
func (p *process) reap() {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			p.exited("exited (its status went to another process: " + err.Error() + ")")
		} else {
			p.exited(describeWaitStatus(ws))
		}
		return
	}
}

// wait closes p.done when the init behind fd (a pidfd) has exited: an init
// adopted after a restart, whose status went to whoever reaped it.
func (p *process) wait(fd int, how string) {
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		}
		break
	}
	p.exited(how)
}

// becomeSubreaper makes the engine the parent of the sandbox inits that
// runc leaves behind, and of what pasta leaves, so it reaps them.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// kill ends the sandbox's whole process tree and waits until it is gone.
// A frozen tree is thawed after the SIGKILL, so it dies at once and runs
// none of its own code on the way (a v1-frozen process cannot die).
func (p *process) kill(timeout time.Duration) error {
	p.sendKill()
	return p.awaitExit(timeout)
}

// sendKill sends the SIGKILL of kill without waiting: the init dies and,
// with it, the kernel kills every process of its PID namespace.
func (p *process) sendKill() {
	p.freezeMu.Lock()
	p.killing = true
	p.signal(syscall.SIGKILL)
	if frozen, _ := p.isFrozen(); frozen || p.frozen {
		_ = p.thawLocked()
	}
	p.freezeMu.Unlock()
}

// awaitExit waits until the init has exited (after sendKill).
func (p *process) awaitExit(timeout time.Duration) error {
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

func describeWaitStatus(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exited with code " + strconv.Itoa(ws.ExitStatus())
}

// sandboxEnv is the environment of a sandbox's processes (the template's
// env wins). Nothing of the engine's own environment goes in.
func sandboxEnv(extra map[string]string) []string {
	env := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": WorkspaceDir,
		"LANG": "C.UTF-8",
		"TERM": "xterm",
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
