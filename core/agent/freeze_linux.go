package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Pausing without a cgroup freezer. In a Kubernetes pod the cgroup file
// system is read-only, so the agent stops the sandbox's processes itself:
// SIGSTOP to every process of the sandbox but the agent (and its init),
// pass after pass until a pass finds every one already stopped (a process
// forked during a pass is caught by the next), and SIGCONT to all of them on
// resume. Memory, files and sockets stay as they are. The local engine uses
// the cgroup freezer instead (core/engine/freeze_linux.go), which no process
// can notice; here a parent that waits with WUNTRACED sees its children
// stop, and a process the user had stopped before the pause is continued
// by the resume.

// freezeLimit bounds a freeze: a tree that keeps making new processes
// faster than they can be stopped (or one stuck in the kernel) is
// continued again and the pause fails.
const freezeLimit = 10 * time.Second

// SetPaused freezes or thaws the sandbox's processes.
func (s *Server) SetPaused(ctx context.Context, req *sandpodv1.SetPausedRequest) (*sandpodv1.SetPausedResponse, error) {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	if !req.GetPaused() {
		n := signalAll(syscall.SIGCONT)
		s.paused.Store(false)
		return &sandpodv1.SetPausedResponse{Paused: false, Processes: int32(n)}, nil
	}
	// Refuse new execs first, so none starts while the tree is stopped.
	s.paused.Store(true)
	n, err := stopAll(ctx, time.Now().Add(freezeLimit))
	if err != nil {
		signalAll(syscall.SIGCONT)
		s.paused.Store(false)
		return nil, errinfo.Newf(codes.Internal, errinfo.ReasonFreezeFailed, "pause: %v (the sandbox's processes were continued)", err)
	}
	return &sandpodv1.SetPausedResponse{Paused: true, Processes: int32(n)}, nil
}

// stopAll sends SIGSTOP until two passes in a row find nothing left to
// stop, and returns how many processes it stopped.
func stopAll(ctx context.Context, deadline time.Time) (int, error) {
	stopped := map[int]bool{}
	quiet := 0
	for wait := 100 * time.Microsecond; ; wait = min(wait*2, 20*time.Millisecond) {
		// running counts every process not stopped yet, signalled or not:
		// one the agent may not signal (EPERM) keeps the freeze from
		// settling, so the pause fails rather than leave it running.
		running, last := 0, ""
		var refused error
		for _, pid := range sandboxProcesses() {
			st := procState(pid)
			if st == 'Z' {
				st = liveThreadState(pid) // a leader gone, its other threads may run on
			}
			switch st {
			case 'T', 't', 'Z', 'X', 0: // stopped, traced, dead or gone
				continue
			case 'D':
				// In the kernel, uninterruptibly: a shell or posix_spawn
				// parent waiting for its vfork child to exec (a child
				// this loop may have stopped first, so the parent waits
				// until the resume), or I/O. With SIGSTOP pending it
				// stops before it runs any code of its own; the SIGCONT
				// of the resume discards that pending stop.
				if stopPending(pid) {
					continue
				}
			}
			running++
			last = fmt.Sprintf("process %d in state %c", pid, st)
			switch err := syscall.Kill(pid, syscall.SIGSTOP); {
			case err == nil:
				stopped[pid] = true
			case !errors.Is(err, syscall.ESRCH):
				refused = fmt.Errorf("process %d: %w", pid, err)
			}
		}
		if running == 0 {
			if quiet++; quiet >= 2 {
				return len(stopped), nil
			}
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			if refused != nil {
				return len(stopped), fmt.Errorf("a process could not be stopped (%v)", refused)
			}
			return len(stopped), fmt.Errorf("%d processes were still running after %s of SIGSTOP (%s)", running, freezeLimit, last)
		}
		if err := ctx.Err(); err != nil {
			return len(stopped), err
		}
		time.Sleep(wait) // let the signals land before looking again
	}
}

// signalAll sends sig to every process of the sandbox; it returns how many.
func signalAll(sig syscall.Signal) int {
	n := 0
	for _, pid := range sandboxProcesses() {
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// sandboxProcesses lists the processes to freeze: every process descended
// from the sandbox's root other than the agent and its ancestors. The root
// is the agent's init when the agent runs under one (PID 1 of the pod's
// container: every orphan of the sandbox reparents to it, so a process that
// setsid's and double-forks is still found), else the agent itself.
func sandboxProcesses() []int {
	self := os.Getpid()
	root := self
	if os.Getenv(childEnv) != "" {
		root = os.Getppid()
	}
	parents := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, err := parentOf(pid); err == nil {
			parents[pid] = ppid
		}
	}
	keep := map[int]bool{self: true}
	for p := self; p > 0; p = parents[p] {
		keep[p] = true
		if p == root || len(keep) > len(parents)+1 {
			break
		}
	}
	var out []int
	for pid := range parents {
		if keep[pid] {
			continue
		}
		for p, hops := parents[pid], 0; p > 0 && hops <= len(parents); p, hops = parents[p], hops+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

var errBadStat = errors.New("bad stat")

// statFields returns the fields of /proc/PID/stat after the command name
// (which may hold spaces and parentheses).
func statFields(pid int) ([][]byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errBadStat
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return nil, errBadStat
	}
	return f, nil
}

func parentOf(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(f[1]))
}

// stopPending reports whether SIGSTOP is pending for a process (its
// thread group's shared pending set, where kill puts it, or its own).
func stopPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	const bit = uint64(1) << (syscall.SIGSTOP - 1)
	for _, line := range bytes.Split(b, []byte("\n")) {
		for _, key := range []string{"ShdPnd:", "SigPnd:"} {
			if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
				if mask, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64); err == nil && mask&bit != 0 {
					return true
				}
			}
		}
	}
	return false
}

// liveThreadState is the state of a thread of process pid that is not
// stopped or dead, or 'Z' when there is none: a process whose main thread
// exited shows as a zombie while its other threads still run.
func liveThreadState(pid int) byte {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, _ := os.ReadDir(dir)
	for _, task := range tasks {
		b, err := os.ReadFile(dir + task.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := bytes.Fields(b[i+1:]); len(f) > 0 && len(f[0]) > 0 {
				switch f[0][0] {
				case 'T', 't', 'Z', 'X':
				default:
					return f[0][0]
				}
			}
		}
	}
	return 'Z'
}

// procState is the state letter of a process (0 when it is gone).
func procState(pid int) byte {
	f, err := statFields(pid)
	if err != nil || len(f[0]) == 0 {
		return 0
	}
	return f[0][0]
}
