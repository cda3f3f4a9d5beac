package integration

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// initPID finds the host PID of a sandbox's init (the `sandpod agent`
// process whose --sandbox is name and whose parent is not another agent).
func initPID(t *testing.T, name string) int { return sandboxPID(t, name, false) }

// agentPID finds the host PID of a sandbox's agent: the child that its init
// started as /proc/self/exe.
func agentPID(t *testing.T, name string) int { return sandboxPID(t, name, true) }

// sandboxPID finds the init (child false) or the agent child (true) of the
// sandbox name among the host's processes.
func sandboxPID(t *testing.T, name string, child bool) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && args[1] == "agent" && (args[0] == "/proc/self/exe") == child &&
			strings.Contains(string(b), "\x00--sandbox\x00"+name+"\x00") {
			return pid
		}
	}
	t.Fatalf("no agent process (child %v) found for sandbox %s", child, name)
	return 0
}

// neverRestartConfig turns automatic agent restarts off.
var neverRestartConfig = defaultConfig + `---
apiVersion: sandpod.dev/v1alpha1
kind: LocalEngineConfig
agentRestart: {policy: Never}
`

func TestDeadSandboxIsReportedAndRecovers(t *testing.T) {
	srv := startServer(t, neverRestartConfig)
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "echo kept > f.txt")

	// The whole process tree dies (the OOM killer, a crash, a kill -9).
	if err := syscall.Kill(initPID(t, sb.Name), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var got *sandpodv1.Sandbox
	eventually(t, "the sandbox reported FAILED", func() bool {
		got, _ = getSandbox(t, c, sb.Name)
		return got.GetPhase() == sandpodv1.Phase_PHASE_FAILED
	})
	if !strings.Contains(got.GetMessage(), "killed by signal") {
		t.Fatalf("failure message %q does not say what happened", got.GetMessage())
	}
	_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true"}, "")
	wantCode(t, err, codes.FailedPrecondition, "failed")
	wantWhy(t, err, errinfo.ReasonSandboxFailed)

	// Resume brings it back with the same identity and files.
	res, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: sb.Name})
	if err != nil || res.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_RUNNING || res.GetSandbox().GetUid() != sb.Uid {
		t.Fatalf("resume after failure: %v %v", res, err)
	}
	if r := sh(t, c, sb.Name, "cat f.txt"); r.stdout != "kept\n" {
		t.Fatalf("files after recovery: %q", r.stdout)
	}
}

const brokenConfig = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: broken
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
        resources:
          limits:
            memory: 1Mi
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: broken
spec:
  templateRef:
    name: broken
  replicas: 2
`

func TestPoolThatCannotStartFailsClearlyWithoutSpinning(t *testing.T) {
	// A 1 MiB memory limit is what keeps its sandboxes from starting:
	// serve applies limits (it refuses to start otherwise).
	srv := startServer(t, brokenConfig)
	limitsLayout(t, srv)
	c := srv.Client()
	_, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "broken"})
	wantCode(t, err, codes.Unavailable, "failed to start")
	wantWhy(t, err, errinfo.ReasonSandboxStartFailed)
	// The pool backs off instead of creating and deleting in a loop: it
	// never holds more members than its size.
	for i := 0; i < 20; i++ {
		list, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{IncludePoolMembers: true})
		if err != nil {
			t.Fatal(err)
		}
		members := 0
		for _, sb := range list.GetSandboxes() {
			if !sb.GetClaimed() {
				members++
			}
		}
		if members > 2 {
			t.Fatalf("a pool of 2 holds %d members", members)
		}
		p, _ := c.GetWarmPool(ctx(t), &sandpodv1.GetWarmPoolRequest{Name: "broken"})
		if p.GetWarmPool().GetReadyReplicas() != 0 {
			t.Fatalf("a member of an unstartable template is ready: %v", p)
		}
	}
	// The refill that fails after the claim's own start may still be under
	// way on a loaded machine: wait for its back-off.
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(srv.Log(), "backing off") {
		if time.Now().After(deadline) {
			t.Fatalf("the server log does not show the pool backing off:\n%s", srv.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
