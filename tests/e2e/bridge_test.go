package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// The bridge as a user reaches it: its Service in sandpod-system, with a
// token from the Secret the install docs tell the operator to create.
const (
	bridgeNamespace   = "sandpod-system"
	bridgeService     = "sandpod-bridge"
	bridgeTokenSecret = "sandpod-bridge-tokens"
)

// bridgeClient dials the in-cluster bridge with the Go client, acting in ns.
func (e *Env) bridgeClient(t testing.TB, ns string) *sandpod.Client {
	t.Helper()
	addr := e.ServiceAddr(t, bridgeNamespace, bridgeService, "grpc")
	c, err := sandpod.Dial(context.Background(), addr,
		sandpod.WithInsecure(), sandpod.WithToken(e.BridgeToken(t)), sandpod.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// BridgeToken is the first token of the bridge's token Secret.
func (e *Env) BridgeToken(t testing.TB) string {
	t.Helper()
	sec := &corev1.Secret{}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: bridgeNamespace, Name: bridgeTokenSecret}, sec); err != nil {
		t.Fatalf("bridge token secret: %v", err)
	}
	fields := strings.Fields(string(sec.Data["tokens"]))
	if len(fields) == 0 {
		t.Fatalf("secret %s holds no token", bridgeTokenSecret)
	}
	return fields[0]
}

// TestBridgeClaimRunsPythonInWarmPod: a claim through the bridge adopts a
// ready pool member (a real pod), and Python runs inside its container;
// files go in and out through the same path as in the local engine.
func TestBridgeClaimRunsPythonInWarmPod(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 2))
	env.WaitPoolReady(t, ns, "python", 2)
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	sb, err := c.Claim(ctx, "python", sandpod.WithEnv(map[string]string{"TASK": "42"}))
	if err != nil {
		t.Fatal(err)
	}
	if !sb.Warm() || sb.Info().Pool != "python" {
		t.Errorf("claim with 2 ready members: warm=%v pool=%q", sb.Warm(), sb.Info().Pool)
	}
	res, err := sb.Run(ctx, `python3 -c 'import os, platform; print(os.environ["TASK"], platform.python_version_tuple()[0])'`)
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "42 3\n" {
		t.Fatalf("python in the claimed pod = %+v, %v", res, err)
	}
	if _, err := sb.Files().WriteFile(ctx, "data/in.txt", []byte("hello"), sandpod.WithParents()); err != nil {
		t.Fatal(err)
	}
	res, err = sb.Run(ctx, `python3 -c 'print(open("data/in.txt").read().upper())' > data/out.txt`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("python on a written file = %+v, %v", res, err)
	}
	out, err := sb.Files().ReadFile(ctx, "data/out.txt")
	if err != nil || string(out) != "HELLO\n" {
		t.Errorf("read back %q, %v", out, err)
	}
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool refills after the claim.
	env.WaitPoolReady(t, ns, "python", 2)
}

// TestBridgeSuspendResumeKeepsStorageAndName: files on the sandbox's PVC
// survive suspend (its pod deleted) and resume (a new pod, the same name
// and DNS name); a call to a suspended sandbox resumes it when the template
// says so.
func TestBridgeSuspendResumeKeepsStorageAndName(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	tmpl := WithVolume(Template(ns, "python-pvc", PythonImage), "workspace", "/workspace")
	tmpl.Spec.Service = true
	tmpl.Spec.AutoResume = true
	env.Apply(t, tmpl)
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	sb, err := c.Claim(ctx, "python-pvc")
	if err != nil {
		t.Fatal(err)
	}
	before := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name()))
	fqdn := sb.Info().ServiceFQDN
	if fqdn == "" {
		t.Errorf("a template with service: true gave no DNS name")
	}
	if _, err := sb.Files().WriteFile(ctx, "kept.txt", []byte("survives")); err != nil {
		t.Fatal(err)
	}

	if err := sb.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the pod of the suspended sandbox to be deleted", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: before.Name}, &corev1.Pod{})
		return err != nil && strings.Contains(err.Error(), "not found"), "pod still there"
	})
	info, err := sb.Refresh(ctx)
	if err != nil || info.Phase != sandpod.PhaseSuspended {
		t.Fatalf("after suspend: phase %v, %v", info.Phase, err)
	}

	// A file call on the suspended sandbox resumes it (autoResume).
	got, err := sb.Files().ReadFile(ctx, "kept.txt")
	if err != nil || string(got) != "survives" {
		t.Fatalf("read after suspend (auto-resume) = %q, %v", got, err)
	}
	after := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name()))
	if after.UID == before.UID {
		t.Errorf("resume kept the old pod %s", after.UID)
	}
	info, err = sb.Refresh(ctx)
	if err != nil || info.Name != sb.Name() || info.ServiceFQDN != fqdn || info.Phase != sandpod.PhaseRunning {
		t.Errorf("after resume: %+v, %v; want the same name and DNS name %q, running", info, err, fqdn)
	}
	res, err := sb.Run(ctx, "hostname")
	if err != nil || strings.TrimSpace(string(res.Stdout)) != sb.Name() {
		t.Errorf("hostname after resume = %q, %v; want the sandbox name", res.Stdout, err)
	}
}

// TestBridgeShutdownTime: at its shutdown time a sandbox is deleted, or kept
// (stopped, files retained) when its policy says Retain.
func TestBridgeShutdownTime(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage))
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	gone, err := c.Claim(ctx, "python", sandpod.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.Claim(ctx, "python", sandpod.WithTTL(20*time.Second), sandpod.WithShutdownPolicy(sandpod.ShutdownRetain))
	if err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the Delete sandbox to be gone after its shutdown time", func() (bool, string) {
		_, err := gone.Refresh(ctx)
		return errors.Is(err, sandpod.ErrNotFound), "still there"
	})
	env.Eventually(t, "the Retain sandbox to be expired", func() (bool, string) {
		info, err := kept.Refresh(ctx)
		return err == nil && info.Phase == sandpod.PhaseExpired, "phase " + string(info.Phase)
	})
	env.Eventually(t, "the expired sandbox's pod to be gone", func() (bool, string) {
		sb := &v1alpha1.Sandbox{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: kept.Name()}, sb)
		return err == nil && sb.Status.PodName == "", fmt.Sprintf("pod %q, %v", sb.Status.PodName, err)
	})
	if _, err := kept.Run(ctx, "true"); !errors.Is(err, sandpod.ErrFailedPrecondition) {
		t.Errorf("exec in an expired sandbox: %v, want FailedPrecondition", err)
	}
}
