package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// kubeTemplate is a template of the cases on Kubernetes. held's pods carry
// a scheduling gate, so no node ever takes them (the API server refuses to
// bind a gated pod); broken's pod asks for more CPU than its limit, which
// the API server refuses to create.
func kubeTemplate(ns, name string) *v1alpha1.SandboxTemplate {
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "conformance"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "python:3.13-slim", Command: []string{"sleep", "infinity"},
		}}},
	}
	switch name {
	case tmplHeld:
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "sandpod.test/hold"}}
	case tmplBroken:
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
	}
	ttl := metav1.Duration{Duration: time.Hour}
	return &v1alpha1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SandboxTemplateSpec{PodTemplate: pod, Lifecycle: v1alpha1.TemplateLifecycle{
			DefaultTTL: &ttl, ShutdownPolicy: v1alpha1.ShutdownPolicyDelete,
		}},
	}
}

func startKube(t *testing.T) *backend {
	t.Helper()
	if os.Getenv(harness.EnvBin) == "" {
		t.Skip(harness.SkipMessage)
	}
	env, err := harness.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	ns := env.Namespace(t)
	env.StartManager(t, harness.ManagerOptions{}, ns)
	ctx := context.Background()
	for _, name := range []string{tmplPlain, tmplWarm, tmplHeld, tmplBroken} {
		if err := env.Client.Create(ctx, kubeTemplate(ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	pool := &v1alpha1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm"},
		Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: tmplWarm}, Replicas: 1},
	}
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	tokens, addrFile := filepath.Join(dir, "tokens"), filepath.Join(dir, "addr")
	if err := os.WriteFile(tokens, []byte(token+" "+ns+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testserver.Binary(t), "bridge", "--kubeconfig", env.Kubeconfig, "--namespaces", ns,
		"--listen", "127.0.0.1:0", "--address-file", addrFile, "--token-file", tokens)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		testserver.CheckNoRace(t, "sandpod bridge", log.String())
		if t.Failed() {
			t.Logf("sandpod bridge:\n%s", log.String())
		}
	})
	var addr string
	eventually(t, "the bridge's address file", func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("sandpod bridge exited:\n%s", log.String())
		default:
		}
		b, err := os.ReadFile(addrFile)
		addr = string(b)
		return err == nil && addr != "", "no address yet"
	})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(bearer(token)))
	if err != nil {
		t.Fatal(err)
	}
	anon, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); _ = anon.Close() })
	return &backend{kind: "kube", ns: ns, api: pb.NewSandboxServiceClient(conn), anon: anon}
}
