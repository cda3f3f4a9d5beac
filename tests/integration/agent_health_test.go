package integration

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// fastHealthConfig checks agents every second; three failed checks in a
// row (2 s timeout each) kill a hung agent; the first restart of a streak is
// immediate, the next ones back off from 1 s.
var fastHealthConfig = defaultConfig + `---
apiVersion: sandpod.dev/v1alpha1
kind: LocalEngineConfig
agentHealthCheck:
  period: 1s
  timeout: 2s
  failureThreshold: 3
agentRestart:
  policy: Always
  initialBackoff: 1s
`

// waitRestarted waits until the sandbox runs again after its n-th restart.
func waitRestarted(t *testing.T, c sandpodv1.SandboxServiceClient, name string, n int32) *sandpodv1.Sandbox {
	t.Helper()
	var got *sandpodv1.Sandbox
	eventually(t, "the sandbox RUNNING again with agent_restarts "+strconv.Itoa(int(n)), func() bool {
		got, _ = getSandbox(t, c, name)
		return got.GetPhase() == sandpodv1.Phase_PHASE_RUNNING && got.GetAgentRestarts() >= n
	})
	if got.GetAgentRestarts() != n {
		t.Fatalf("agent_restarts = %d, want %d (%s)", got.GetAgentRestarts(), n, got.GetMessage())
	}
	return got
}

func readyMessage(sb *sandpodv1.Sandbox) string {
	for _, c := range sb.GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetMessage()
		}
	}
	return ""
}

func TestKilledAgentIsRestartedAndTheCountSurvivesARestartOfServe(t *testing.T) {
	srv := startServer(t, fastHealthConfig)
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "echo kept > f.txt")

	if err := syscall.Kill(agentPID(t, sb.Name), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := waitRestarted(t, c, sb.Name, 1)
	for what, msg := range map[string]string{"message": got.GetMessage(), "Ready condition message": readyMessage(got)} {
		if !strings.HasPrefix(msg, "agent restarted 1 time; last: exited with code 137 at ") {
			t.Errorf("%s %q does not say when and why the agent restarted", what, msg)
		}
	}
	if got.GetUid() != sb.Uid {
		t.Fatalf("the restarted sandbox has another uid: %s, was %s", got.GetUid(), sb.Uid)
	}
	if r := sh(t, c, sb.Name, "cat f.txt"); r.stdout != "kept\n" {
		t.Fatalf("files after the restart: %q", r.stdout)
	}

	// The count is the engine's, stored with the sandbox: a restart of
	// `sandpod serve` keeps it (and does not restart the agent).
	srv.Restart(t)
	got, err := getSandbox(t, c, sb.Name)
	if err != nil || got.GetAgentRestarts() != 1 || got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("after restarting serve: %v, %v", got, err)
	}
	if r := sh(t, c, sb.Name, "cat f.txt"); r.stdout != "kept\n" {
		t.Fatalf("files after restarting serve: %q", r.stdout)
	}

	// A second death counts on from there.
	if err := syscall.Kill(agentPID(t, sb.Name), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got = waitRestarted(t, c, sb.Name, 2)
	if !strings.HasPrefix(got.GetMessage(), "agent restarted 2 times; last: exited") {
		t.Errorf("message after the second restart: %q", got.GetMessage())
	}
}

func TestHungAgentFailsCallsInTimeAndIsRestarted(t *testing.T) {
	srv := startServer(t, fastHealthConfig)
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "echo kept > f.txt")

	pid := agentPID(t, sb.Name)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	// A call with a deadline fails within it (plus generous slack for a
	// loaded machine), with a code to retry on and a message that names the
	// sandbox: not a bare "context deadline exceeded".
	const deadline = 3 * time.Second
	cctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	began := time.Now()
	err := func() error {
		stream, err := c.Exec(cctx)
		if err != nil {
			return err
		}
		if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true"}}}); err != nil {
			_, err = stream.Recv()
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				return err
			}
		}
	}()
	took := time.Since(began)
	t.Logf("exec on a hung agent, deadline %s: %v after %s", deadline, err, took.Round(time.Millisecond))
	if code := status.Code(err); code != codes.DeadlineExceeded && code != codes.Unavailable {
		t.Fatalf("exec on a hung agent: %v, want DEADLINE_EXCEEDED or UNAVAILABLE", err)
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, sb.Name) || !strings.Contains(msg, "agent") {
		t.Fatalf("exec on a hung agent: message %q does not name the sandbox and its agent", msg)
	}
	if took > deadline+10*time.Second {
		t.Fatalf("exec on a hung agent took %s, with a deadline of %s", took, deadline)
	}

	// So does a file read, whatever it meets: the stopped agent, its kill,
	// or its restart.
	rctx, rcancel := context.WithTimeout(context.Background(), deadline)
	defer rcancel()
	began = time.Now()
	err = func() error {
		stream, err := c.ReadFile(rctx, &sandpodv1.ReadFileRequest{Sandbox: sb.Name, Path: "f.txt"})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				return err
			}
		}
	}()
	took = time.Since(began)
	t.Logf("read on a hung agent, deadline %s: %v after %s", deadline, err, took.Round(time.Millisecond))
	if code := status.Code(err); code != codes.DeadlineExceeded && code != codes.Unavailable {
		t.Fatalf("read on a hung agent: %v, want DEADLINE_EXCEEDED or UNAVAILABLE", err)
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, sb.Name) {
		t.Fatalf("read on a hung agent: message %q does not name the sandbox", msg)
	}
	if took > deadline+10*time.Second {
		t.Fatalf("read on a hung agent took %s, with a deadline of %s", took, deadline)
	}

	// The health checks notice, the engine kills the process tree and
	// starts a new one: same name, same files.
	got := waitRestarted(t, c, sb.Name, 1)
	if !strings.Contains(got.GetMessage(), "killed after 3 failed health checks") {
		t.Errorf("message %q does not say the agent was killed for failing its health checks", got.GetMessage())
	}
	if !strings.Contains(srv.Log(), "agent did not answer health checks for") {
		t.Errorf("the server log does not say why it killed the agent:\n%s", srv.Log())
	}
	if r := sh(t, c, sb.Name, "cat f.txt"); r.stdout != "kept\n" {
		t.Fatalf("files after the restart: %q", r.stdout)
	}
}

// TestAgentRestartBackoffFirstAtOnce: the local engine's restart back-off
// is the controller's (lifecycle.RestartBackoff): the first restart of a
// streak is immediate, the next waits initialBackoff (an hour here, so the
// second death leaves the sandbox PENDING with its restart an hour away),
// and ResumeSandbox starts a backing-off sandbox at once.
func TestAgentRestartBackoffFirstAtOnce(t *testing.T) {
	srv := startServer(t, defaultConfig+`---
apiVersion: sandpod.dev/v1alpha1
kind: LocalEngineConfig
agentRestart:
  policy: Always
  initialBackoff: 1h
  maxBackoff: 2h
`)
	c := srv.Client()
	sb, _ := claim(t, c, "python")

	if err := syscall.Kill(agentPID(t, sb.Name), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRestarted(t, c, sb.Name, 1)

	if err := syscall.Kill(agentPID(t, sb.Name), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var got *sandpodv1.Sandbox
	eventually(t, "the sandbox PENDING with its second restart an hour away", func() bool {
		got, _ = getSandbox(t, c, sb.Name)
		return got.GetPhase() == sandpodv1.Phase_PHASE_PENDING && strings.Contains(got.GetMessage(), "restarting it in 1h0m0s (restart 2;")
	})
	if got.GetAgentRestarts() != 1 {
		t.Fatalf("agent_restarts = %d while the second restart backs off, want 1 (%s)", got.GetAgentRestarts(), got.GetMessage())
	}

	if _, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: sb.Name}); err != nil {
		t.Fatalf("resume a backing-off sandbox: %v", err)
	}
	eventually(t, "the resumed sandbox RUNNING", func() bool {
		got, _ = getSandbox(t, c, sb.Name)
		return got.GetPhase() == sandpodv1.Phase_PHASE_RUNNING
	})
}
