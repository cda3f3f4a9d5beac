// Package kwoke2e runs the real `sandpod controller` binary against the kwok bed
// (its own API server, since the binary watches every namespace).
package kwoke2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

func TestControllerBinary(t *testing.T) {
	if os.Getenv(harness.EnvBin) == "" {
		t.Skip(harness.SkipMessage)
	}
	env, err := harness.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()

	bin := filepath.Join(t.TempDir(), "sandpod")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sandpod")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build sandpod: %v\n%s", err, out)
	}
	metrics, health := harness.FreeAddr(t), harness.FreeAddr(t)
	var logs strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "controller",
		"--kubeconfig", env.Kubeconfig,
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", health,
		"--leader-elect", "--leader-election-namespace", "default",
		"--runtime-class-policy", "none",
		"--agent-image", "example.com/sandpod:e2e",
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("controller log:\n%s", logs.String())
		}
	}()

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	harness.Eventually(t, harness.Timeout, "readyz", func() (bool, string) {
		code, body := get("http://" + health + "/readyz")
		return code == http.StatusOK, fmt.Sprint(code, body)
	})

	ns := env.Namespace(t)
	sb := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e"},
		Spec: v1alpha1.SandboxSpec{PodTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		}}},
	}
	if err := env.Client.Create(context.Background(), sb); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, harness.Timeout, "sandbox running", func() (bool, string) {
		got := &v1alpha1.Sandbox{}
		if err := env.Get(got, ns, "e2e"); err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == v1alpha1.SandboxRunning, string(got.Status.Phase)
	})
	pod := &corev1.Pod{}
	if err := env.Get(pod, ns, "e2e"); err != nil {
		t.Fatal(err)
	}
	// --agent-delivery=auto on this 1.37 API server: an image volume of
	// --agent-image, no init container.
	agentImage := ""
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			agentImage = v.Image.Reference
		}
	}
	if agentImage != "example.com/sandpod:e2e" || len(pod.Spec.InitContainers) != 0 {
		t.Errorf("--agent-image not mounted as an image volume: image volume %q, init containers %v", agentImage, pod.Spec.InitContainers)
	}
	harness.Eventually(t, harness.Timeout, "metrics", func() (bool, string) {
		code, body := get("http://" + metrics + "/metrics")
		return code == http.StatusOK && strings.Contains(body, `sandpod_sandboxes{phase="Running"} 1`), fmt.Sprint(code)
	})
}
