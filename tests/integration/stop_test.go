package integration

import (
	"strings"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// Ctrl-C on `make run` (SIGINT to serve's whole process group, as the
// terminal sends it) and SIGTERM stop serve, not its sandboxes: serve says
// in one line how many keep running and how to stop them, and the next
// serve takes them over as they were, network included.
func TestStopSaysWhatKeepsRunning(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{ProcessGroup: true})
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "echo kept > notes.txt")
	// pasta's tap device beside loopback: it goes away if pasta dies.
	ifaces := `python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'`
	before := sh(t, c, sb.Name, ifaces).stdout
	if strings.Count(before, "'") != 4 {
		t.Fatalf("interfaces before the stop: %q, want loopback and pasta's tap device", before)
	}
	waitPoolReady(t, c, "python", 2) // so that the count is known: 1 claimed, 2 members

	const line = "sandpod serve stopped; 3 sandboxes keep running (1 claimed, 2 warm pool members) and the next serve on "
	purge := " purge --state-dir " + srv.StateDir()
	srv.Interrupt(t)
	log := srv.Log()
	if !strings.Contains(log, line) || !strings.Contains(log, purge) {
		t.Fatalf("after Ctrl-C, serve's log does not say what keeps running (%q) and how to stop it (%q):\n%s", line, purge, log)
	}

	srv.StartAgain(t)
	got, err := getSandbox(t, c, sb.Name)
	if err != nil || got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING || got.GetAgentRestarts() != 0 {
		t.Fatalf("after a restart the sandbox is %v (restarts %d, err %v), want the same one running", got.GetPhase(), got.GetAgentRestarts(), err)
	}
	if r := sh(t, c, sb.Name, "cat notes.txt"); r.stdout != "kept\n" {
		t.Fatalf("notes.txt after the restart: %+v", r)
	}
	if after := sh(t, c, sb.Name, ifaces).stdout; after != before {
		t.Fatalf("interfaces after Ctrl-C and a restart: %q, before: %q (did Ctrl-C reach pasta?)", after, before)
	}

	waitPoolReady(t, c, "python", 2)
	srv.Stop(t) // SIGTERM, as a service manager sends it
	if log := srv.Log(); strings.Count(log, line) != 2 || strings.Count(log, purge) != 2 {
		t.Fatalf("after SIGTERM, serve's log does not say it again:\n%s", log)
	}
}
