package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// attachNetwork gives a sandbox with egress a user-mode network: pasta
// (from passt) makes a tap device in the sandbox's own network namespace
// and carries its connections out through ordinary sockets of its own.
// Port forwarding is off in both directions (-t/-u/-T/-U none) and the
// gateway is not mapped to the host (--no-map-gw), so the host's loopback,
// the server's ports and other sandboxes stay out of reach; the host's
// other addresses are closed to pasta's sockets by hostFilter.
//
// pasta runs as the sandbox's own root (the unprivileged host id at the
// base of its range) inside its user namespace, but outside its PID
// namespace: its /proc (whose net/ shows the host's sockets and
// interfaces, its network namespace being the host's) is not in the
// sandbox's /proc, and no process of the sandbox can name it to signal or
// trace it. It lives in a PID namespace of its own whose first process,
// its keeper, waits on the sandbox's lifeline (a pipe whose write end only
// the sandbox's init holds, see startProcess): when the init is gone the
// keeper kills pasta and exits, and the kernel ends whatever is left in its
// PID namespace. That holds whether or not serve runs meanwhile.
//
// pasta isolates itself once set up (an empty mount namespace, a seccomp
// filter), but its sockets are the host network namespace's: a flaw in
// pasta that the sandbox's packets could reach would reach the host (see
// docs/security.md). The engine opens the network namespace itself
// (pasta, holding fewer capabilities than the sandbox's init, may not open
// it through /proc) and hands it over.
//
// pasta is charged to the sandbox: it joins the container's memory, pids
// and cpu cgroups (cgroups, see cgroups.Layout.AccountingProcs) before it starts, so a
// sandbox that floods its network spends its own CPU and memory limits,
// not the host's.
func attachNetwork(pid int, idBase uint32, cgroups []string, lifeline, log *os.File) error {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return errors.New("egress: Internet needs nsenter (Debian package util-linux)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return errors.New("egress: Internet needs unshare (Debian package util-linux)")
	}
	pasta, err := exec.LookPath("pasta")
	if err != nil {
		return errors.New("egress: Internet needs pasta (Debian package passt); `make build` installs it when run as root; or use egress: None")
	}
	if fi, err := os.Stat("/dev/net/tun"); err != nil || fi.Mode().Perm()&0o006 != 0o006 {
		return errors.New("egress: Internet needs /dev/net/tun open to unprivileged users, as udev makes it (chmod 0666 /dev/net/tun; `make build` does it); or use egress: None")
	}
	if err := hostFilter.ensure(); err != nil {
		return err
	}
	ns := "/proc/" + strconv.Itoa(pid) + "/ns/"
	netns, err := os.Open(ns + "net")
	if err != nil {
		return fmt.Errorf("open the sandbox's network namespace: %w", err)
	}
	defer netns.Close()
	dir, err := os.MkdirTemp("", pastaDirPrefix) // left by a killed serve: sweepPastaDirs
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chown(dir, int(idBase), int(idBase)); err != nil { // pasta writes its pid file as the sandbox's root
		return err
	}
	pidFile := filepath.Join(dir, "pid")
	// A shell joins the cgroups (writing 0 moves the writer) and then
	// becomes unshare, so everything after is born in them; the paths are
	// arguments, never part of the script.
	join := []string{"-c", `while [ "$1" != -- ]; do echo 0 > "$1" || exit 97; shift; done; shift; exec "$@"`, "sh"}
	join = append(append(join, cgroups...), "--")
	// The keeper, PID 1 of pasta's PID namespace: pasta in the background
	// without the lifeline (fd 4), a reader of the lifeline that kills it
	// at end of file, and a wait for pasta, whose status it exits with.
	keeper := []string{unshare, "--pid", "--fork", "--kill-child", "/bin/sh", "-c",
		`"$@" 4<&- & p=$!; { while read -r _; do :; done; kill -KILL $p; } <&4 & exec 4<&-; wait $p`, "keeper"}
	args := append(join, keeper...)
	args = append(args, nsenter, "--user="+ns+"user", "-S", "0", "-G", "0", "--",
		pasta, "--runas", "0", "--config-net", "--quiet", "--foreground",
		"-t", "none", "-u", "none", "-T", "none", "-U", "none", "--no-map-gw",
		"--pid", pidFile, "--netns", "/proc/self/fd/3")
	cmd := exec.Command("/bin/sh", args...)
	cmd.ExtraFiles = []*os.File{netns, lifeline}
	cmd.Stdout, cmd.Stderr = log, log
	// A session of its own: pasta outlives serve with its sandbox, so the
	// Ctrl-C that a terminal sends to serve's whole process group (or the
	// hangup when it closes) must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start pasta: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// pasta writes its pid file once the namespace's interface is set up.
	deadline := time.After(10 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("pasta exited while setting up the sandbox's network: %v (see the sandbox's agent.log)", err)
		case <-deadline:
			_ = cmd.Process.Kill()
			return errors.New("pasta did not set up the sandbox's network within 10s")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
