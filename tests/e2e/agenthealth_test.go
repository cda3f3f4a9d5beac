package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// agentPID finds, on this node, the agent server of a sandbox's pod: the
// `sandpod agent … --sandbox NAME` process in the pod's cgroup that its
// init (the container's PID 1, same argv) started with SANDPOD_AGENT_CHILD
// set. Under runc a pod's processes are host processes (under gVisor they
// are not).
func agentPID(t testing.TB, pod *corev1.Pod, sandboxName string) int {
	t.Helper()
	uid := string(pod.UID)
	uidUnderscored := strings.ReplaceAll(uid, "-", "_") // the systemd cgroup driver's spelling
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		argv, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(argv, "\x00")), "\x00")
		if len(args) < 2 || args[1] != "agent" || !containsPair(args, "--sandbox", sandboxName) {
			continue
		}
		environ, err := os.ReadFile(dir + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, environ...), []byte("\x00SANDPOD_AGENT_CHILD=1\x00")) {
			continue
		}
		cg, err := os.ReadFile(dir + "/cgroup")
		if err != nil || !(strings.Contains(string(cg), uid) || strings.Contains(string(cg), uidUnderscored)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		return pid
	}
	t.Fatalf("no agent process of pod %s (uid %s) on this node", pod.Name, uid)
	return 0
}

func containsPair(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// waitAgentBack waits until the sandbox reports at least n agent restarts
// and is running again, and returns what it reports.
func waitAgentBack(t *testing.T, env *Env, ctx context.Context, sb *sandpod.Sandbox, n int32) sandpod.Info {
	t.Helper()
	var info sandpod.Info
	env.Eventually(t, fmt.Sprintf("%s running with %d agent restart(s)", sb.Name(), n), func() (bool, string) {
		var err error
		if info, err = sb.Refresh(ctx); err != nil {
			return false, err.Error()
		}
		return info.AgentRestarts >= n && info.Phase == sandpod.PhaseRunning,
			fmt.Sprintf("phase=%s restarts=%d message=%q", info.Phase, info.AgentRestarts, info.Message)
	})
	return info
}

// TestHungOrDeadAgentIsRestarted: the agent of a claimed sandbox (a real
// pod under runc) is first frozen with SIGSTOP, then killed. A call to the
// frozen agent fails within its deadline with DEADLINE_EXCEEDED or
// UNAVAILABLE, not later; the kubelet's liveness probe (gRPC health of the
// agent) restarts it; the Sandbox reports the restart and its cause; the
// workspace, the name and the pod survive; exec works again. A crash
// (SIGKILL) is reported and recovered the same way.
func TestHungOrDeadAgentIsRestarted(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage))
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	sb, err := c.Claim(ctx, "python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Files().WriteFile(ctx, "kept.txt", []byte("still here")); err != nil {
		t.Fatal(err)
	}
	var kube v1alpha1.Sandbox
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name()}, &kube); err != nil {
		t.Fatal(err)
	}
	pod := env.Pod(t, &kube)

	// 1. Hung: the call fails at its deadline, with a code a client retries on.
	pid := agentPID(t, pod, sb.Name())
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // if the test fails before the kubelet kills it
	const deadline = 4 * time.Second
	callCtx, cancel := context.WithTimeout(ctx, deadline)
	start := time.Now()
	_, err = sb.Run(callCtx, "true")
	took := time.Since(start)
	cancel()
	if code := status.Code(err); code != codes.DeadlineExceeded && code != codes.Unavailable {
		t.Errorf("exec on a hung agent: %v (code %s), want DEADLINE_EXCEEDED or UNAVAILABLE", err, code)
	}
	if took > deadline+5*time.Second {
		t.Errorf("exec on a hung agent returned after %s, past its %s deadline", took.Round(time.Millisecond), deadline)
	}
	info := waitAgentBack(t, env, ctx, sb, 1)
	ready, _ := info.Condition(v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, "agent restarted 1 time") || !strings.Contains(ready.Message, "code 137") {
		t.Errorf("Ready message after a hang %q does not name the restart and its exit", ready.Message)
	}
	after := env.Pod(t, &kube)
	if after.UID != pod.UID || info.Name != sb.Name() {
		t.Errorf("the hang replaced the pod (uid %s → %s) or the sandbox", pod.UID, after.UID)
	}
	if got, err := sb.Files().ReadFile(ctx, "kept.txt"); err != nil || string(got) != "still here" {
		t.Errorf("workspace after the restart: %q, %v", got, err)
	}
	if res, err := sb.Run(ctx, "echo ok"); err != nil || string(res.Stdout) != "ok\n" {
		t.Errorf("exec after the restart: %+v, %v", res, err)
	}

	// 2. Dead: reported and restarted the same way.
	if err := syscall.Kill(agentPID(t, after, sb.Name()), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitAgentBack(t, env, ctx, sb, 2)
	if res, err := sb.Run(ctx, "cat kept.txt"); err != nil || string(res.Stdout) != "still here" {
		t.Errorf("exec after the crash: %+v, %v", res, err)
	}
}
