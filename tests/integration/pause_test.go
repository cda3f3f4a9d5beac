package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// pauseConfig adds a template that does not auto-resume, so an exec on a
// paused sandbox of it is refused rather than resumed, and checks agents'
// health every second (two silent checks in a row would kill an agent).
var pauseConfig = testserver.DefaultConfig + `---
apiVersion: sandpod.dev/v1alpha1
kind: LocalEngineConfig
agentHealthCheck:
  period: 1s
  timeout: 1s
  failureThreshold: 2
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: manual
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
`

// counter is a process that counts in its memory and writes each value to
// the file "count" (atomically), and its PID to "pid". setsid: it outlives
// the exec that started it.
const counter = `setsid python3 -c '
import os, time
open("pid", "w").write(str(os.getpid()))
i = 0
while True:
    i += 1
    open("count.tmp", "w").write(str(i))
    os.replace("count.tmp", "count")
    time.sleep(0.02)
' >/dev/null 2>&1 </dev/null &`

// hostCount reads the counter's file from the host side of the sandbox's
// work directory: the agent cannot be asked while the sandbox is paused.
func hostCount(t *testing.T, srv *testserver.Server, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv.StateDir(), "sandboxes", "default", name, "work", "count"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func startCounter(t *testing.T, srv *testserver.Server, c sandpodv1.SandboxServiceClient, name string) {
	t.Helper()
	if r := sh(t, c, name, counter); r.exit.GetExitCode() != 0 {
		t.Fatalf("start counter: %+v", r)
	}
	eventually(t, "the counter to count", func() bool { return hostCount(t, srv, name) > 5 })
}

// wantFrozen checks the counter does not move for a while (it moves 50
// times a second when it runs; a second is ample even on a loaded machine).
func wantFrozen(t *testing.T, srv *testserver.Server, name string) int {
	t.Helper()
	v := hostCount(t, srv, name)
	time.Sleep(time.Second)
	if got := hostCount(t, srv, name); got != v {
		t.Fatalf("paused counter moved from %d to %d", v, got)
	}
	return v
}

func pause(t *testing.T, c sandpodv1.SandboxServiceClient, name string) *sandpodv1.Sandbox {
	t.Helper()
	resp, err := c.PauseSandbox(ctx(t), &sandpodv1.PauseSandboxRequest{Name: name})
	if err != nil {
		t.Fatalf("pause %s: %v", name, err)
	}
	if resp.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_PAUSED {
		t.Fatalf("paused sandbox is %s, want PAUSED", resp.GetSandbox().GetPhase())
	}
	return resp.GetSandbox()
}

func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func TestPauseKeepsMemory(t *testing.T) {
	srv := startServer(t, pauseConfig)
	c := srv.Client()
	resp, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	name := resp.GetSandbox().GetName()
	startCounter(t, srv, c, name)
	pid := sh(t, c, name, "cat pid").stdout

	sb := pause(t, c, name)
	var paused bool
	for _, cond := range sb.GetConditions() {
		if cond.GetType() == "Paused" && cond.GetStatus() == "True" {
			paused = true
		}
	}
	if !paused {
		t.Errorf("conditions of a paused sandbox: %v, want Paused True", sb.GetConditions())
	}
	if got, _ := getSandbox(t, c, name); got.GetPhase() != sandpodv1.Phase_PHASE_PAUSED {
		t.Fatalf("get: %s, want PAUSED", got.GetPhase())
	}
	v := wantFrozen(t, srv, name)

	// Exec and file calls on a paused sandbox that does not auto-resume:
	// FAILED_PRECONDITION, reason SANDBOX_PAUSED, and it stays paused.
	_, err = execIn(t, c, &sandpodv1.ExecStart{Sandbox: name, Shell: "true"}, "")
	wantCode(t, err, codes.FailedPrecondition, "resume it first")
	if reason(err) != "SANDBOX_PAUSED" {
		t.Errorf("exec on a paused sandbox: reason %q, want SANDBOX_PAUSED", reason(err))
	}
	_, err = readFile(t, c, name, "count")
	wantCode(t, err, codes.FailedPrecondition, "paused")
	wantWhy(t, err, errinfo.ReasonSandboxPaused)
	// Pausing again changes nothing.
	pause(t, c, name)
	// The frozen agent's silence is no failure: outlast several health
	// rounds (a hung agent would be killed within about 4 s here).
	time.Sleep(5 * time.Second)
	if got := hostCount(t, srv, name); got != v {
		t.Fatalf("paused counter moved from %d to %d", v, got)
	}

	res, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: name})
	if err != nil || res.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("resume: %v %v", res, err)
	}
	// It continues from where it stopped: the same process, the count in
	// its memory going on from v (a restarted one would count from 1).
	eventually(t, "the counter to continue", func() bool { return hostCount(t, srv, name) > v })
	if got := hostCount(t, srv, name); got < v {
		t.Fatalf("counter restarted: %d after resume, %d before", got, v)
	}
	if again := sh(t, c, name, "cat pid; kill -0 $(cat pid) && echo alive").stdout; again != pid+"alive\n" {
		t.Fatalf("after resume: %q, want the same process %s alive", again, pid)
	}
	if r, _ := getSandbox(t, c, name); r.GetAgentRestarts() != 0 {
		t.Fatalf("agent restarted %d times across pause", r.GetAgentRestarts())
	}
}

func TestPauseAutoResumes(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startCounter(t, srv, c, sb.Name)
	pause(t, c, sb.Name)
	v := wantFrozen(t, srv, sb.Name)
	// The template auto-resumes: an exec thaws the sandbox and runs.
	if r := sh(t, c, sb.Name, "echo hi"); r.stdout != "hi\n" {
		t.Fatalf("exec on a paused auto-resume sandbox: %+v", r)
	}
	if got, _ := getSandbox(t, c, sb.Name); got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("after an exec: %s, want RUNNING", got.GetPhase())
	}
	eventually(t, "the counter to continue", func() bool { return hostCount(t, srv, sb.Name) > v })
}

func TestPauseSurvivesServeRestart(t *testing.T) {
	srv := startServer(t, pauseConfig)
	c := srv.Client()
	resp, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	name := resp.GetSandbox().GetName()
	startCounter(t, srv, c, name)
	pause(t, c, name)
	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		if how == "SIGTERM" {
			srv.Restart(t)
		} else {
			srv.Kill(t)
			srv.StartAgain(t)
		}
		if got, err := getSandbox(t, c, name); err != nil || got.GetPhase() != sandpodv1.Phase_PHASE_PAUSED {
			t.Fatalf("after %s: %v %v, want PAUSED", how, got, err)
		}
		wantFrozen(t, srv, name)
	}
	v := hostCount(t, srv, name)
	if _, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the counter to continue", func() bool { return hostCount(t, srv, name) > v })
	if got, _ := getSandbox(t, c, name); got.GetAgentRestarts() != 0 || got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("after resume: %s, %d agent restarts; want RUNNING, 0", got.GetPhase(), got.GetAgentRestarts())
	}
}

func TestPauseThenSuspendAndDelete(t *testing.T) {
	srv := startServer(t, pauseConfig)
	c := srv.Client()
	mk := func() string {
		resp, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetSandbox().GetName()
	}
	a, b := mk(), mk()
	sh(t, c, a, "echo kept > f.txt")
	pause(t, c, a)
	// Suspend of a paused sandbox: its frozen processes are killed (a
	// frozen process cannot die until thawed), its files kept.
	sus, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: a})
	if err != nil || sus.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_SUSPENDED {
		t.Fatalf("suspend a paused sandbox: %v %v", sus, err)
	}
	_, err = c.PauseSandbox(ctx(t), &sandpodv1.PauseSandboxRequest{Name: a})
	wantCode(t, err, codes.FailedPrecondition, "suspended")
	wantWhy(t, err, errinfo.ReasonSandboxSuspended)
	if _, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: a}); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, c, a, "cat f.txt"); r.stdout != "kept\n" {
		t.Fatalf("files after pause, suspend, resume: %q", r.stdout)
	}

	pause(t, c, b)
	if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: b}); err != nil {
		t.Fatalf("delete a paused sandbox: %v", err)
	}
	_, err = getSandbox(t, c, b)
	wantCode(t, err, codes.NotFound, "")

	// The shutdown time still applies to a paused sandbox.
	d := mk()
	pause(t, c, d)
	if _, err := c.ExtendSandbox(ctx(t), &sandpodv1.ExtendSandboxRequest{Name: d, Ttl: dur(time.Second)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the paused sandbox to expire", func() bool {
		_, err := getSandbox(t, c, d)
		return status.Code(err) == codes.NotFound
	})

	_, err = c.PauseSandbox(ctx(t), &sandpodv1.PauseSandboxRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "")
	wantWhy(t, err, errinfo.ReasonSandboxNotFound)
	_, err = c.PauseSandbox(ctx(t), &sandpodv1.PauseSandboxRequest{Name: "Bad_Name"})
	wantCode(t, err, codes.InvalidArgument, "")
	wantWhy(t, err, errinfo.ReasonInvalidName)
}

func TestPausePoolMemberRefused(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	var members []*sandpodv1.Sandbox
	eventually(t, "pool members", func() bool {
		members = poolMembers(t, c)
		return len(members) > 0 && members[0].GetPhase() == sandpodv1.Phase_PHASE_RUNNING
	})
	_, err := c.PauseSandbox(ctx(t), &sandpodv1.PauseSandboxRequest{Name: members[0].GetName()})
	wantRefused(t, "pause", err)
	if got, _ := getSandbox(t, c, members[0].GetName()); got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("refused member is %s, want RUNNING", got.GetPhase())
	}
}

func TestIdlePause(t *testing.T) {
	srv := startServer(t, testserver.DefaultConfig+`---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: idler
spec:
  lifecycle:
    idleTimeout: 5s # the counter below must start before it on a loaded machine
    idleAction: Pause
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
`)
	c := srv.Client()
	tmpl, err := c.ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tmpl.GetTemplates() {
		if tp.GetName() == "idler" && tp.GetIdleAction() != sandpodv1.IdleAction_IDLE_ACTION_PAUSE {
			t.Fatalf("template idler: idle action %s, want PAUSE", tp.GetIdleAction())
		}
	}
	resp, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "idler"})
	if err != nil {
		t.Fatal(err)
	}
	name := resp.GetSandbox().GetName()
	startCounter(t, srv, c, name)
	eventually(t, "idle pause", func() bool {
		got, err := getSandbox(t, c, name)
		return err == nil && got.GetPhase() == sandpodv1.Phase_PHASE_PAUSED
	})
	wantFrozen(t, srv, name)
}
