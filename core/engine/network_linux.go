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
// the server's ports and other sandboxes stay out of reach.
//
// pasta runs as the sandbox's own root (the unprivileged host id at the
// base of its range) inside its user and PID namespaces, and ends with the
// sandbox, as every process of its PID namespace does. It isolates itself
// once set up (an empty mount namespace, a seccomp filter), but its
// sockets are the host network namespace's: a flaw in pasta that the
// sandbox's packets could reach would reach the host's loopback (see
// docs/security.md). The engine opens
// the network namespace itself (pasta, holding fewer capabilities than the
// sandbox's init, may not open it through /proc) and hands it over.
//
// pasta is charged to the sandbox: it joins the container's memory, pids
// and cpu cgroups (cgroups, see cgroupLayout.accountingProcs) before it starts, so a
// sandbox that floods its network spends its own CPU and memory limits,
// not the host's.
func attachNetwork(pid int, idBase uint32, cgroups []string, log *os.File) error {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return errors.New("egress: Internet needs nsenter (Debian package util-linux)")
	}
	pasta, err := exec.LookPath("pasta")
	if err != nil {
		return errors.New("egress: Internet needs pasta (Debian package passt); `make build` installs it when run as root; or use egress: None")
	}
	if fi, err := os.Stat("/dev/net/tun"); err != nil || fi.Mode().Perm()&0o006 != 0o006 {
		return errors.New("egress: Internet needs /dev/net/tun open to unprivileged users, as udev makes it (chmod 0666 /dev/net/tun; `make build` does it); or use egress: None")
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
	// becomes nsenter, so pasta, nsenter's child, is born in them; the paths
	// are arguments, never part of the script.
	join := []string{"-c", `while [ "$1" != -- ]; do echo 0 > "$1" || exit 97; shift; done; shift; exec "$@"`, "sh"}
	join = append(append(join, cgroups...), "--")
	cmd := exec.Command("/bin/sh", append(join, nsenter, "--user="+ns+"user", "--pid="+ns+"pid", "-S", "0", "-G", "0", "--",
		pasta, "--runas", "0", "--config-net", "--quiet", "--foreground",
		"-t", "none", "-u", "none", "-T", "none", "-U", "none", "--no-map-gw",
		"--pid", pidFile, "--netns", "/proc/self/fd/3")...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{netns}
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
