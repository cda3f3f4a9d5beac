package agent

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// childEnv marks the agent process started by the init process.
const childEnv = "SANDPOD_AGENT_CHILD"

// IsInit reports whether this process should act as the sandbox's init: it is
// PID 1 of its PID namespace (local engine, or a container's main process)
// and not already the agent child that an init started.
func IsInit() bool { return os.Getpid() == 1 && os.Getenv(childEnv) == "" }

// RunInit is PID 1 of a sandbox. It starts the agent as its child with the
// same arguments, forwards termination signals to it, reaps every orphan
// (exec'd programs' children reparent here), and exits with the agent's
// status. When secret is set, the child reads it from a pipe on the fd that
// gateFD names (never from its environment, which sandbox processes could
// read in /proc).
func RunInit(secret string, gateFD int) int {
	child := exec.Command("/proc/self/exe", os.Args[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(), childEnv+"=1")
	child.ExtraFiles = inheritedFiles()
	if secret != "" {
		r, w, err := os.Pipe()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandpod init: secret pipe: %v\n", err)
			return 1
		}
		if _, err := w.WriteString(secret); err != nil {
			fmt.Fprintf(os.Stderr, "sandpod init: secret pipe: %v\n", err)
			return 1
		}
		w.Close()
		for len(child.ExtraFiles) < gateFD-3 {
			child.ExtraFiles = append(child.ExtraFiles, nil)
		}
		child.ExtraFiles = append(child.ExtraFiles[:gateFD-3], r)
	}
	if err := child.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "sandpod init: start agent: %v\n", err)
		return 1
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			_ = child.Process.Signal(s)
		}
	}()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 1
		}
		if pid == child.Process.Pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// inheritedFiles passes fds 3.. (the listener) on to the agent child.
func inheritedFiles() []*os.File {
	var files []*os.File
	for fd := 3; fd < 16; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			break
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd)))
	}
	return files
}

// IsolateFilesystem is run by the init of a local-engine sandbox, inside its
// new user and mount namespaces: the host's file system becomes read-only
// (recursively), except the sandbox's work directory; /tmp becomes a private
// tmpfs; /proc is remounted (read-only) for the new PID namespace. It also
// sets the host name and brings up loopback in a private network namespace.
//
// hide, when set, is covered with an empty read-only tmpfs (the engine's
// state directory: other sandboxes' files and the store with every secret).
func IsolateFilesystem(workDir, hide, hostname string, netIsolated bool) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// Keep a writable clone of the work directory before everything turns
	// read-only, then put it back in place.
	work, err := unix.OpenTree(unix.AT_FDCWD, workDir, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("clone work dir mount: %w", err)
	}
	defer unix.Close(work)
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make host file system read-only: %w", err)
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=512m"); err != nil {
		return fmt.Errorf("mount /tmp: %w", err)
	}
	if hide != "" {
		if err := os.MkdirAll(hide, 0o755); err != nil {
			return fmt.Errorf("hide %s: %w", hide, err)
		}
		if err := unix.Mount("tmpfs", hide, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("hide %s: %w", hide, err)
		}
	}
	// The work directory may live under a tmpfs just mounted: make its path
	// exist again before putting it back.
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return fmt.Errorf("work dir mount point: %w", err)
	}
	if err := unix.MoveMount(work, "", unix.AT_FDCWD, workDir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount work dir: %w", err)
	}
	if hide != "" {
		if err := unix.MountSetattr(unix.AT_FDCWD, hide, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("hide %s read-only: %w", hide, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if hostname != "" {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("set hostname: %w", err)
		}
	}
	if netIsolated {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring up loopback: %w", err)
		}
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
