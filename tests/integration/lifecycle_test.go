package integration

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

const manualResumeConfig = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: manual
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
  lifecycle:
    idleTimeout: 1s
`

func waitPoolReady(t *testing.T, c sandpodv1.SandboxServiceClient, pool string, n int32) {
	t.Helper()
	eventually(t, "pool "+pool+" ready", func() bool {
		p, err := c.GetWarmPool(ctx(t), &sandpodv1.GetWarmPoolRequest{Name: pool})
		return err == nil && p.GetWarmPool().GetReadyReplicas() >= n
	})
}

func TestPoolOfTwoServesThreeClaims(t *testing.T) {
	// No refill until the pool is scaled: exactly 2 claims can be warm.
	srv := testserver.Start(t, testserver.Options{ExtraArgs: []string{"--pool-refill-delay", "1h"}})
	c := srv.Client()
	waitPoolReady(t, c, "python", 2)

	var warm int
	names := map[string]bool{}
	for i := 0; i < 3; i++ {
		sb, w := claim(t, c, "python")
		names[sb.Name] = true
		if w {
			warm++
		}
		if r := sh(t, c, sb.Name, "echo ready"); r.stdout != "ready\n" {
			t.Fatalf("claim %d not usable: %+v", i, r)
		}
	}
	if warm != 2 || len(names) != 3 {
		t.Fatalf("3 claims on a pool of 2: %d warm, %d distinct; want 2 warm, 3 distinct", warm, len(names))
	}
	// The pool refills behind the claims (a scale ends the refill delay).
	if _, err := c.ScaleWarmPool(ctx(t), &sandpodv1.ScaleWarmPoolRequest{Name: "python", Replicas: 2}); err != nil {
		t.Fatal(err)
	}
	waitPoolReady(t, c, "python", 2)
	list, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	if err != nil || len(list.GetSandboxes()) != 3 {
		t.Fatalf("list of claimed sandboxes: %v %v", list, err)
	}
}

func TestRequestIDsMakeRetriesIdempotent(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	first, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", RequestId: "rollout-7"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", RequestId: "rollout-7"})
	if err != nil || again.GetSandbox().GetUid() != first.GetSandbox().GetUid() {
		t.Fatalf("retried claim returned %v (%v), want %s", again.GetSandbox().GetName(), err, first.GetSandbox().GetName())
	}
	cr, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python", RequestId: "create-1"})
	if err != nil {
		t.Fatal(err)
	}
	cr2, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python", RequestId: "create-1"})
	if err != nil || cr2.GetSandbox().GetUid() != cr.GetSandbox().GetUid() {
		t.Fatalf("retried create made %v (%v)", cr2.GetSandbox().GetName(), err)
	}
	_, err = c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python", RequestId: "rollout-7"})
	wantCode(t, err, codes.InvalidArgument, "request_id")
	list, _ := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	if len(list.GetSandboxes()) != 2 {
		t.Fatalf("%d sandboxes after retries, want 2", len(list.GetSandboxes()))
	}
}

func TestSuspendResumeKeepsFiles(t *testing.T) {
	srv := startServer(t, testserverDefaultPlus(manualResumeConfig))
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "echo kept > notes.txt; sleep 1000 &")

	sus, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: sb.Name})
	if err != nil || sus.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_SUSPENDED {
		t.Fatalf("suspend: %v %v", sus, err)
	}
	res, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: sb.Name})
	if err != nil || res.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_RUNNING || res.GetSandbox().GetUid() != sb.Uid {
		t.Fatalf("resume: %v %v", res, err)
	}
	r := sh(t, c, sb.Name, "cat notes.txt; pgrep -c sleep || true")
	if r.stdout != "kept\n0\n" {
		t.Fatalf("after resume: %q (want the file kept and the old processes gone)", r.stdout)
	}

	// The python template auto-resumes on exec; "manual" does not.
	if _, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: sb.Name}); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, c, sb.Name, "cat notes.txt"); r.stdout != "kept\n" {
		t.Fatalf("auto-resume exec: %q", r.stdout)
	}
	m, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: m.GetSandbox().GetName()}); err != nil {
		t.Fatal(err)
	}
	_, err = execIn(t, c, &sandpodv1.ExecStart{Sandbox: m.GetSandbox().GetName(), Shell: "true"}, "")
	wantCode(t, err, codes.FailedPrecondition, "suspended")
	wantWhy(t, err, errinfo.ReasonSandboxSuspended)
}

func TestIdleSandboxIsSuspended(t *testing.T) {
	srv := startServer(t, manualResumeConfig)
	c := srv.Client()
	cr, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "idle suspend", func() bool {
		sb, err := getSandbox(t, c, cr.GetSandbox().GetName())
		return err == nil && sb.GetPhase() == sandpodv1.Phase_PHASE_SUSPENDED
	})
}

func TestShutdownTime(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()

	del, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Ttl: dur(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	keep, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{
		Template: "python", Ttl: dur(time.Hour), ShutdownPolicy: sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN,
	})
	if err != nil {
		t.Fatal(err)
	}
	keepName := keep.GetSandbox().GetName()
	sh(t, c, keepName, "echo precious > result.txt")
	// Only now bring its end close, so a slow machine cannot expire it early.
	if _, err := c.ExtendSandbox(ctx(t), &sandpodv1.ExtendSandboxRequest{Name: keepName, Ttl: dur(time.Second)}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "Delete policy removes the sandbox", func() bool {
		_, err := getSandbox(t, c, del.GetSandbox().GetName())
		return err != nil && strings.Contains(err.Error(), "not found")
	})
	eventually(t, "Retain policy keeps it, expired", func() bool {
		sb, err := getSandbox(t, c, keepName)
		return err == nil && sb.GetPhase() == sandpodv1.Phase_PHASE_EXPIRED
	})
	_, err = execIn(t, c, &sandpodv1.ExecStart{Sandbox: keepName, Shell: "true"}, "")
	wantCode(t, err, codes.FailedPrecondition, "expired")
	wantWhy(t, err, errinfo.ReasonSandboxExpired)

	// Extending an expired sandbox lets it resume with its files.
	ext, err := c.ExtendSandbox(ctx(t), &sandpodv1.ExtendSandboxRequest{Name: keepName, ShutdownTime: timestamppb.New(time.Now().Add(time.Hour))})
	if err != nil || ext.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_SUSPENDED {
		t.Fatalf("extend: %v %v", ext, err)
	}
	if _, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: keepName}); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, c, keepName, "cat result.txt"); r.stdout != "precious\n" {
		t.Fatalf("retained file: %q", r.stdout)
	}
}

func TestServerRestartLosesNothing(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	running, _ := claim(t, c, "python")
	// A file in the sandbox's private /tmp lives only as long as its processes.
	sh(t, c, running.Name, "echo alive > /tmp/marker; echo disk > f.txt")
	suspended, _ := claim(t, c, "python")
	sh(t, c, suspended.Name, "echo s > f.txt")
	if _, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: suspended.Name}); err != nil {
		t.Fatal(err)
	}

	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		if how == "SIGTERM" {
			srv.Restart(t)
		} else {
			srv.Kill(t)
			srv.StartAgain(t)
		}
		sb, err := getSandbox(t, c, running.Name)
		if err != nil || sb.GetPhase() != sandpodv1.Phase_PHASE_RUNNING || sb.GetUid() != running.Uid {
			t.Fatalf("after %s: running sandbox is %v (%v)", how, sb, err)
		}
		if r := sh(t, c, running.Name, "cat /tmp/marker f.txt"); r.stdout != "alive\ndisk\n" {
			t.Fatalf("after %s the sandbox's processes were not kept: %q", how, r.stdout)
		}
		sb, err = getSandbox(t, c, suspended.Name)
		if err != nil || sb.GetPhase() != sandpodv1.Phase_PHASE_SUSPENDED {
			t.Fatalf("after %s: suspended sandbox is %v (%v)", how, sb, err)
		}
	}
	list, _ := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	if len(list.GetSandboxes()) != 2 {
		t.Fatalf("%d claimed sandboxes after restarts, want 2", len(list.GetSandboxes()))
	}
}

func testserverDefaultPlus(extra string) string {
	return defaultConfig + "---\n" + extra
}
