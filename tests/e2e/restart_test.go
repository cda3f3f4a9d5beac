package e2e

import (
	"fmt"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// TestRestartOnFailureReplacesAFailedPod: a template with restartOnFailure
// and pods that are never restarted in place (restartPolicy Never). The
// main process of a claimed sandbox's pod (the agent's init) exits non-zero
// (137, its agent killed): the pod fails, and the controller replaces it
// with a new pod of the same Sandbox (same name and uid) on the same volume
// (the file written before is there). A claim that turned restartOnFailure
// off gets its failure reported instead: the Sandbox is Failed and its pod
// is kept for inspection.
func TestRestartOnFailureReplacesAFailedPod(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	tmpl := WithVolume(Template(ns, "python-restart", PythonImage), "workspace", "/workspace")
	tmpl.Spec.RestartOnFailure = true
	tmpl.Spec.PodTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	env.Apply(t, tmpl)
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	sb, err := c.Claim(ctx, "python-restart")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.Claim(ctx, "python-restart", sandpod.WithRestartOnFailure(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*sandpod.Sandbox{sb, kept} {
		if _, err := s.Files().WriteFile(ctx, "state.txt", []byte("step 41")); err != nil {
			t.Fatal(err)
		}
	}
	before := env.WaitSandboxReady(t, ns, sb.Name())
	if !before.Spec.RestartOnFailure {
		t.Fatalf("sandbox %s: restartOnFailure false, want the template's true", sb.Name())
	}
	keptBefore := env.WaitSandboxReady(t, ns, kept.Name())
	if keptBefore.Spec.RestartOnFailure {
		t.Fatalf("sandbox %s: restartOnFailure true, want the claim's false", kept.Name())
	}
	pod, keptPod := env.Pod(t, before), env.Pod(t, keptBefore)
	for _, p := range []struct {
		pod  *corev1.Pod
		name string
	}{{pod, sb.Name()}, {keptPod, kept.Name()}} {
		if err := syscall.Kill(agentPID(t, p.pod, p.name), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}

	// Replaced: a new pod of the same name, the same Sandbox, the same files.
	env.Eventually(t, "a new pod for the failed sandbox", func() (bool, string) {
		p := &corev1.Pod{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod.Name}, p)
		return err == nil && p.UID != pod.UID && p.DeletionTimestamp == nil, fmt.Sprint(err)
	})
	after := env.WaitSandboxReady(t, ns, sb.Name())
	if after.UID != before.UID || after.Name != before.Name {
		t.Errorf("sandbox after the replacement: %s (uid %s), want %s (uid %s)", after.Name, after.UID, before.Name, before.UID)
	}
	if got := env.Pod(t, after); got.Spec.Hostname != sb.Name() {
		t.Errorf("new pod hostname %q, want %s", got.Spec.Hostname, sb.Name())
	}
	// What a client sees: one pod replacement, on the sandbox only.
	if info, err := sb.Refresh(ctx); err != nil || info.PodRestarts != 1 {
		t.Errorf("Sandbox.PodRestarts after the replacement: %d, %v; want 1", info.PodRestarts, err)
	}
	res, err := sb.Run(ctx, "cat state.txt; echo; hostname")
	if err != nil || string(res.Stdout) != "step 41\n"+sb.Name()+"\n" {
		t.Errorf("after the pod was replaced: %q, %v; want the file and the same hostname", res.Stdout, err)
	}

	// Not replaced: reported Failed, the failed pod kept.
	env.Eventually(t, "the sandbox without restartOnFailure Failed", func() (bool, string) {
		got := &v1alpha1.Sandbox{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: kept.Name()}, got)
		return err == nil && got.Status.Phase == v1alpha1.SandboxFailed, fmt.Sprint(got.Status.Phase, err)
	})
	p := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: keptPod.Name}, p); err != nil || p.UID != keptPod.UID {
		t.Errorf("the failed pod of %s was not kept: %v (uid %s, was %s)", kept.Name(), err, p.UID, keptPod.UID)
	}
}
