package engine

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// userNS is a sandbox's user namespace, made before runc runs and owned by
// the sandbox's own host id (the base of its range), not by root.
//
// The kernel charges every per-user count of a user namespace (inotify
// instances and watches, POSIX message queue bytes, queued signals, user
// namespaces, processes) to the user inside and, one level up, to the
// namespace's owner: the euid of whoever made it. A namespace made by runc
// (as root) charges a whole sandbox to host root, so one sandbox could take
// root's budgets (128 inotify instances, 800 KiB of message queues, its
// queued signals) and break host services and every other sandbox. Owned
// by the base of its range, each sandbox spends budgets of its own: the
// host's per-user limits (the sysctls under /proc/sys/user) apply to it
// as a whole, and the rlimits the engine runs with, read when the
// namespace is made, bound its message queues and queued signals.
//
// The namespace is held by a child (cat, blocked on a pipe) until runc has
// joined it; from then on the container's processes hold it, and it ends
// with them. A crashed engine closes the pipe, so the holder never
// outlives it.
type userNS struct {
	cmd     *exec.Cmd
	hold    *os.File // the pipe the holder reads: closed, it exits
	release func()   // ends the holder (once)
}

// pendingUserNS is a user namespace being made while the rest of a start
// is prepared (the holder's fork and exec take milliseconds).
type pendingUserNS struct {
	done chan struct{}
	ns   *userNS
	err  error
}

// makeUserNS starts making base's user namespace in the background.
func makeUserNS(base uint32) *pendingUserNS {
	p := &pendingUserNS{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.ns, p.err = newUserNS(base, idRangeSize)
	}()
	return p
}

// wait returns the namespace once it is made.
func (p *pendingUserNS) wait() (*userNS, error) {
	<-p.done
	return p.ns, p.err
}

// release ends its holder, once made: the namespace lives on in the
// container that joined it, or ends.
func (p *pendingUserNS) release() {
	if ns, err := p.wait(); err == nil {
		ns.release()
	}
}

// newUserNS makes a user namespace owned by host id base and maps 0..size-1
// inside onto base.. on the host.
//
// A user namespace's owner is the effective uid of the thread that makes
// it, and a multithreaded process (Go) cannot unshare one: so the holder
// is cloned with CLONE_NEWUSER from a thread of the engine that has taken
// base as its real and effective ids for the clone. Credentials are per
// thread in the kernel (raw system calls, not Go's all-thread ones); the
// thread takes root's back after the clone and is never handed back to
// Go's scheduler: its goroutine ends locked, so the runtime ends the
// thread (or parks it for good, if it is the main one).
func newUserNS(base, size uint32) (*userNS, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(catPath())
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		started <- asIDs(base, cmd.Start)
	}()
	if err := <-started; err != nil {
		w.Close()
		return nil, fmt.Errorf("make the sandbox's user namespace: %w", err)
	}
	ns := &userNS{cmd: cmd, hold: w}
	ns.release = sync.OnceFunc(func() {
		w.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	m := []byte("0 " + strconv.FormatUint(uint64(base), 10) + " " + strconv.FormatUint(uint64(size), 10))
	for _, f := range []string{"uid_map", "gid_map"} {
		if err := os.WriteFile("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/"+f, m, 0); err != nil {
			ns.release()
			return nil, fmt.Errorf("map the sandbox's user namespace (%s): %w", f, err)
		}
	}
	return ns, nil
}

// asIDs runs start on the calling (locked) thread with base as its real
// and effective uid and gid and no supplementary groups, then gives the
// thread root's ids and groups back. The saved ids stay root's meanwhile,
// so the thread keeps its permitted capabilities, and it raises them as
// effective again: a kernel that lets only privileged processes make user
// namespaces (Ubuntu's AppArmor restriction, Debian's
// unprivileged_userns_clone) still lets this one.
func asIDs(base uint32, start func() error) error {
	groups, err := unix.Getgroups()
	if err != nil {
		return fmt.Errorf("getgroups: %w", err)
	}
	id, none := uintptr(base), ^uintptr(0)
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	defer restoreIDs(groups)
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, id, id, none); e != 0 {
		return fmt.Errorf("setresgid %d: %w", base, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, id, id, none); e != 0 {
		return fmt.Errorf("setresuid %d: %w", base, e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	caps[0].Effective, caps[1].Effective = caps[0].Permitted, caps[1].Permitted
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return start()
}

// restoreIDs gives the calling thread root's ids and the groups it had
// (the saved uid is root's, so it may; euid 0 restores its capabilities).
func restoreIDs(groups []int) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_SETRESUID, 0, 0, 0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_SETRESGID, 0, 0, 0)
	gs := make([]uint32, len(groups))
	for i, g := range groups {
		gs[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	_, _, _ = syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0)
}

// catPath is the holder's program: any that blocks reading its input.
var catPath = sync.OnceValue(func() string {
	if p, err := exec.LookPath("cat"); err == nil {
		return p
	}
	return "/bin/cat"
})

// path is the namespace for runc to join (runc reads its maps from there).
func (n *userNS) path() string { return "/proc/" + strconv.Itoa(n.cmd.Process.Pid) + "/ns/user" }
