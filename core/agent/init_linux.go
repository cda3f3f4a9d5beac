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
