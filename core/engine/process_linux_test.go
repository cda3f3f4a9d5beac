package engine

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startChild starts a process that reap (Wait4) may reap: not through
// exec.Cmd, which would reap it itself.
func startChild(t *testing.T, argv ...string) *process {
	t.Helper()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	p := &process{pid: pid, pidfd: openPidfd(pid), done: make(chan struct{})}
	go p.reap()
	return p
}

// A sandbox init is signalled while it runs; once it has exited, a signal
// meant for it reaches nobody, even when its PID now names another process
// (stood in for here by a live sleeper's PID: on a busy machine with 32,768
// PIDs the kernel hands an exited init's PID out again within minutes, and
// a delete of a sandbox whose init had died used to SIGKILL whatever got it).
func TestSignalReachesTheInitOnly(t *testing.T) {
	p := startChild(t, "sleep", "600")
	p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("a running init did not die of SIGKILL")
	}
	if p.exit != "killed by signal killed" {
		t.Errorf("exit %q", p.exit)
	}

	bystander := exec.Command("sleep", "600")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- bystander.Wait() }()
	t.Cleanup(func() { _ = bystander.Process.Kill(); <-ended })
	p.pid = bystander.Process.Pid // the old PID, handed to another process
	p.signal(syscall.SIGKILL)
	p.sendKill()
	select {
	case err := <-ended:
		ended <- err
		t.Fatalf("the process that got the exited init's PID was killed: %v", err)
	case <-time.After(2 * time.Second): // a kill lands in microseconds; 2 s on a loaded machine
	}
}
