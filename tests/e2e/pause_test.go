package e2e

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// podCounter counts in its memory and writes each count to the file
// "count" in the workspace (atomically), and its PID to "pid". setsid: it
// leaves the exec's process group, so only the agent's walk of its init's
// descendants can find it.
const podCounter = `setsid python3 -c '
import os, time
open("pid", "w").write(str(os.getpid()))
i = 0
while True:
    i += 1
    open("count.tmp", "w").write(str(i))
    os.replace("count.tmp", "count")
    time.sleep(0.02)
' >/dev/null 2>&1 </dev/null &`

// TestBridgePauseKeepsMemory pauses a sandbox through the bridge on a real
// pod (runc and gVisor): its counting process stops (the count read from
// outside the agent, by kubectl exec, does not move), exec answers
// FAILED_PRECONDITION SANDBOX_PAUSED, the controller reports Paused; after
// resume the same process counts on from where it stopped.
func TestBridgePauseKeepsMemory(t *testing.T) {
	t.Parallel()
	for _, rc := range []string{"", GVisor} {
		name := "runc"
		if rc != "" {
			name = rc
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := Setup(t)
			ns := env.Namespace(t)
			tmpl := Template(ns, "python-pause", PythonImage)
			if rc != "" {
				tmpl.Spec.RuntimeClassName = &rc
			}
			env.Apply(t, tmpl)
			c := env.bridgeClient(t, ns)
			ctx := Context(t)
			sb, err := c.Create(ctx, "python-pause")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sb.Delete(ctx) }()
			res, err := sb.Run(ctx, podCounter+" pwd")
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("start the counter: %+v %v", res, err)
			}
			root := strings.TrimSpace(string(res.Stdout))
			kube := &v1alpha1.Sandbox{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name()}, kube); err != nil {
				t.Fatal(err)
			}
			pod := env.Pod(t, kube)
			// Read by kubectl exec: a process the agent did not start, so
			// it is not frozen, and the agent is not asked.
			count := func() int {
				out, err := env.PodExec(ctx, ns, pod.Name, "", "cat", root+"/count")
				if err != nil {
					return -1
				}
				n, _ := strconv.Atoi(strings.TrimSpace(out))
				return n
			}
			env.Eventually(t, "the counter to count", func() (bool, string) { n := count(); return n > 5, strconv.Itoa(n) })
			pid, err := sb.Run(ctx, "cat pid")
			if err != nil {
				t.Fatal(err)
			}

			if err := sb.Pause(ctx); err != nil {
				t.Fatalf("pause: %v", err)
			}
			if sb.Info().Phase != sandpod.PhasePaused {
				t.Fatalf("after pause: %s, want Paused", sb.Info().Phase)
			}
			v := count()
			time.Sleep(2 * time.Second)
			if got := count(); got != v || v <= 0 {
				t.Fatalf("paused counter moved from %d to %d", v, got)
			}
			_, err = sb.Run(ctx, "true")
			var serr *sandpod.Error
			if !errors.Is(err, sandpod.ErrFailedPrecondition) || !errors.As(err, &serr) || serr.Reason != sandpod.ReasonSandboxPaused {
				t.Fatalf("exec while paused: %v, want FAILED_PRECONDITION %s", err, sandpod.ReasonSandboxPaused)
			}
			env.Eventually(t, "the controller to report Paused", func() (bool, string) {
				got := &v1alpha1.Sandbox{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name()}, got); err != nil {
					return false, err.Error()
				}
				cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPaused)
				return got.Status.Phase == v1alpha1.SandboxPaused && cond != nil && cond.Status == metav1.ConditionTrue, string(got.Status.Phase)
			})

			if err := sb.Resume(ctx); err != nil {
				t.Fatalf("resume: %v", err)
			}
			env.Eventually(t, "the counter to continue", func() (bool, string) { n := count(); return n > v, strconv.Itoa(n) })
			if got := count(); got < v {
				t.Fatalf("the counter restarted: %d after resume, %d before", got, v)
			}
			again, err := sb.Run(ctx, "cat pid; kill -0 $(cat pid) && echo alive")
			if err != nil || string(again.Stdout) != string(pid.Stdout)+"alive\n" {
				t.Fatalf("after resume: %q %v, want the same process %q alive", again.Stdout, err, pid.Stdout)
			}
			after := env.Pod(t, kube)
			if after.UID != pod.UID {
				t.Fatal("the pod was replaced across pause and resume")
			}
		})
	}
}

// TestBridgeIdlePause: a template with idleAction Pause has its idle
// sandboxes paused (by the bridge, which can reach their agents), not
// suspended: the pod stays, its processes stop, and resume continues them.
func TestBridgeIdlePause(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	tmpl := Template(ns, "python-idle", PythonImage)
	tmpl.Spec.Lifecycle.IdleTimeout = &metav1.Duration{Duration: 5 * time.Second} // resumed, it pauses again 5 s later
	tmpl.Spec.Lifecycle.IdleAction = v1alpha1.IdlePause
	env.Apply(t, tmpl)
	c := env.bridgeClient(t, ns)
	ctx := Context(t)
	sb, err := c.Create(ctx, "python-idle")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sb.Delete(ctx) }()
	res, err := sb.Run(ctx, podCounter+" pwd")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("start the counter: %+v %v", res, err)
	}
	root := strings.TrimSpace(string(res.Stdout))
	kube := &v1alpha1.Sandbox{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name()}, kube); err != nil {
		t.Fatal(err)
	}
	pod := env.Pod(t, kube)
	count := func() int {
		out, err := env.PodExec(ctx, ns, pod.Name, "", "cat", root+"/count")
		if err != nil {
			return -1
		}
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	env.Eventually(t, "the idle sandbox paused", func() (bool, string) {
		got := &v1alpha1.Sandbox{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name()}, got); err != nil {
			return false, err.Error()
		}
		return got.Spec.OperatingMode == v1alpha1.OperatingModePaused && got.Status.Phase == v1alpha1.SandboxPaused,
			string(got.Spec.OperatingMode) + "/" + string(got.Status.Phase)
	})
	v := count()
	time.Sleep(2 * time.Second)
	if got := count(); got != v || v <= 0 {
		t.Fatalf("idle-paused counter moved from %d to %d", v, got)
	}
	if err := sb.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the counter to continue", func() (bool, string) { n := count(); return n > v, strconv.Itoa(n) })
	if after := env.Pod(t, kube); after.UID != pod.UID {
		t.Fatal("the pod was replaced across the idle pause")
	}
}
