package agent

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv marks the agent process started by the init process.
const childEnv = "SANDPOD_AGENT_CHILD"

// IsInit reports whether this process should act as the sandbox's init: it is
// PID 1 of its PID namespace (local engine, or a container's main process)
// and not already the agent child that an init started.
func IsInit() bool { return os.Getpid() == 1 && os.Getenv(childEnv) == "" }

// Respawn protocol (local engine, --respawn-fd): the engine writes
// RespawnArm before it kills every process of the sandbox but the init
// (the agent too) for a restore in place, and RespawnGo once the
// workspace is swapped. An init whose agent died with RespawnArm read
// waits for RespawnGo and starts a new agent (fresh state: no watches,
// code contexts or terminals of the old tree); anything else, or the
// engine's end of the pipe closing, ends the init as before.
const (
	RespawnArm byte = 'R'
	RespawnGo  byte = 'G'
)

// respawnWait bounds how long an armed init waits for RespawnGo: an engine
// that hangs mid-restore leaves a sandbox that ends rather than one that
// waits forever.
const respawnWait = 60 * time.Second

// RunInit is PID 1 of a sandbox. It starts the agent as its child with the
// same arguments, forwards termination signals to it, reaps every orphan
// (exec'd programs' children reparent here), and exits with the agent's
// status, unless the engine asked for a new agent (see RespawnArm). When
// secret is set, the child reads it from a pipe on the fd that gateFD names
// (never from its environment, which sandbox processes could read in
// /proc). respawnFD (0: none) is the engine's respawn pipe; the agent does
// not inherit it.
func RunInit(secret string, gateFD, respawnFD int) int {
	// Made once: an os.File closes its fd when collected, and every agent
	// started gets the same listener.
	inherited := inheritedFiles()
	if respawnFD >= 3 {
		if respawnFD-3 < len(inherited) {
			inherited[respawnFD-3] = nil // closed in the agent
		}
		unix.CloseOnExec(respawnFD) // nor in anything the agent runs
		if _, err := unix.FcntlInt(uintptr(respawnFD), unix.F_GETFD, 0); err != nil || unix.SetNonblock(respawnFD, true) != nil {
			respawnFD = 0
		}
	} else {
		respawnFD = 0
	}
	var current atomic.Pointer[os.Process]
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			if p := current.Load(); p != nil {
				_ = p.Signal(s)
			}
		}
	}()
	child, gate, code := startAgentChild(secret != "", gateFD, inherited)
	if child == nil {
		return code
	}
	if !openGate(gate, secret) {
		return 1
	}
	for {
		current.Store(child.Process)
		status := reapUntil(child.Process.Pid)
		var st respawnState
		if respawnFD == 0 || !st.read(respawnFD) || !st.armed {
			return status
		}
		// Every other process of the old tree got its SIGKILL while the
		// freezer held it: none runs any code of its own again. What it
		// left in the container's own scratch file systems and IPC
		// namespace goes now, while
		// the next agent loads (a new container would start with them
		// empty).
		cleared := make(chan struct{})
		go func() { defer close(cleared); clearScratch(scratchDirs); clearSysVIPC() }()
		// The next agent starts loading now, while the engine swaps the
		// workspace; it touches nothing before its secret, which it gets
		// only on RespawnGo.
		next, gate, code := startAgentChild(secret != "", gateFD, inherited)
		if next == nil {
			return code
		}
		current.Store(next.Process)
		if !st.awaitGo(respawnFD) {
			_ = next.Process.Kill()
			reapUntil(next.Process.Pid)
			return status
		}
		<-cleared
		if !openGate(gate, secret) {
			return 1
		}
		child = next
		fmt.Fprintln(os.Stderr, "sandpod init: agent restarted for a restore in place")
	}
}

// startAgentChild starts one agent with the listener (and any other
// inherited fds) and, with gated, a fresh pipe on gateFD whose write end
// it returns: the agent waits on it for the secret (see openGate).
func startAgentChild(gated bool, gateFD int, inherited []*os.File) (*exec.Cmd, *os.File, int) {
	child := exec.Command("/proc/self/exe", os.Args[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(), childEnv+"=1")
	child.ExtraFiles = append([]*os.File(nil), inherited...)
	var w *os.File
	if gated {
		r, pw, err := os.Pipe()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandpod init: secret pipe: %v\n", err)
			return nil, nil, 1
		}
		defer r.Close()
		w = pw
		for len(child.ExtraFiles) < gateFD-3 {
			child.ExtraFiles = append(child.ExtraFiles, nil)
		}
		if gateFD-3 < len(child.ExtraFiles) {
			child.ExtraFiles[gateFD-3] = r
		} else {
			child.ExtraFiles = append(child.ExtraFiles, r)
		}
	}
	if err := child.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "sandpod init: start agent: %v\n", err)
		if w != nil {
			w.Close()
		}
		return nil, nil, 1
	}
	return child, w, 0
}

// openGate hands the agent its secret and closes the pipe (nil: no gate).
func openGate(w *os.File, secret string) bool {
	if w == nil {
		return true
	}
	defer w.Close()
	if _, err := w.WriteString(secret); err != nil {
		fmt.Fprintf(os.Stderr, "sandpod init: secret pipe: %v\n", err)
		return false
	}
	return true
}

// reapUntil reaps every child until pid ends and returns its exit code.
func reapUntil(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 1
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// respawnState is what the engine wrote on the respawn pipe so far.
type respawnState struct{ armed, goAhead, closed bool }

// read drains what the pipe holds now; false if it failed or closed.
func (st *respawnState) read(fd int) bool {
	for {
		var b [16]byte
		n, err := unix.Read(fd, b[:])
		switch {
		case n > 0:
			for _, c := range b[:n] {
				switch c {
				case RespawnArm:
					st.armed = true
				case RespawnGo:
					st.goAhead = st.armed
				}
			}
		case n == 0 && err == nil: // the engine's end closed
			st.closed = true
			return false
		case err == unix.EAGAIN:
			return true
		case err != unix.EINTR:
			return false
		}
	}
}

// awaitGo waits up to respawnWait for RespawnGo after RespawnArm, reaping
// orphans meanwhile: the restore killed every process of the sandbox, and
// their zombies are the init's.
func (st *respawnState) awaitGo(fd int) bool {
	deadline := time.Now().Add(respawnWait)
	for {
		if st.goAhead {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		reapOrphans()
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, _ = unix.Poll(fds, int(min(left, 20*time.Millisecond)/time.Millisecond)+1)
		if !st.read(fd) {
			return false
		}
	}
}

// reapOrphans reaps the children that have exited, without waiting.
func reapOrphans() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// inheritedFiles passes fds 3.. (the listener) on to the agent child, but
// those marked close-on-exec (the lifeline), which stay the init's alone.
func inheritedFiles() []*os.File {
	var files []*os.File
	for fd := 3; fd < 16; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			break
		}
		if flags&unix.FD_CLOEXEC != 0 {
			files = append(files, nil) // closed in the child; fd 3+i stays fd 3+i
			continue
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd)))
	}
	return files
}

// scratchDirs are the container's own file systems (tmpfs and mqueue, see
// the engine's ociSpec) that outlive its processes: a restore in place
// empties them, as a new container has them.
var scratchDirs = []string{"/tmp", "/dev/shm", "/dev/mqueue"}

// clearScratch removes everything in dirs (not the directories). The
// sandbox's code left these entries: os.RemoveAll removes a link, never
// what it points to, and works below each directory by file descriptor,
// so no path the sandbox made is followed.
func clearScratch(dirs []string) {
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue // no such file system in this sandbox
		}
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
				fmt.Fprintf(os.Stderr, "sandpod init: clear %s: %v\n", d, err)
			}
		}
	}
}
