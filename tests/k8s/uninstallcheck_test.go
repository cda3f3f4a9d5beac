package k8s_test

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// TestUninstallCheck runs the real `sandpod uninstall-check` on a kwok bed
// of its own (delete deletes every Sandbox of the cluster) as the chart's
// pre-delete hook does: as the hook's ServiceAccount, with the RBAC the
// chart renders (real helm) for each uninstall.sandboxes. With a pool and a
// Sandbox with a PVC: refuse exits 68 and says how many and which; keep
// goes on and deletes nothing; delete, with refuse's RBAC, is forbidden
// (least privilege: list only); with its own, it deletes the pool and both
// Sandboxes while the controller finalizes them.
func TestUninstallCheck(t *testing.T) {
	harness.Skip(t, env)
	bed, err := harness.Start()
	if err != nil {
		t.Fatalf("private kwok bed: %v", err)
	}
	t.Cleanup(bed.Stop)
	sys := bed.Namespace(t) // the release's namespace: the hook's ServiceAccount
	ns := bed.Namespace(t)
	bed.StartManager(t, harness.ManagerOptions{}, ns)
	for _, o := range []clientObject{makeTemplate(ns, "tmpl"), makePool(ns, "pool", "tmpl", 1), withStorage(makeSandbox(ns, "keep-me"))} {
		if err := bed.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, harness.Timeout, "the pool's sandbox and keep-me", func() (bool, string) {
		l := &v1alpha1.SandboxList{}
		err := bed.Client.List(ctx, l)
		return err == nil && len(l.Items) == 2, fmt.Sprintf("%d sandboxes, err=%v", len(l.Items), err)
	})

	bin := filepath.Join(t.TempDir(), "sandpod")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sandpod")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A kubeconfig that impersonates the hook's ServiceAccount.
	cfg, err := clientcmd.LoadFromFile(bed.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + sys + ":sandpod-uninstall-check"
	}
	hookKubeconfig := filepath.Join(t.TempDir(), "hook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, hookKubeconfig); err != nil {
		t.Fatal(err)
	}
	applyHookRBAC := func(mode string) {
		t.Helper()
		serverSideApply(t, bed, "uninstall-check-test", renderHookRBAC(t, sys, mode))
	}
	check := func(mode string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, "uninstall-check", "--kubeconfig", hookKubeconfig, "--sandboxes="+mode, "--timeout=2m",
			"--helm-release=sandpod", "--helm-namespace="+sys, "--helm-revision=4")
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("uninstall-check --sandboxes=%s: exit %d\n%s", mode, code, out)
		return string(out), code
	}

	applyHookRBAC("refuse")
	out, code := check("refuse")
	if code != 68 || !strings.Contains(out, "refusing: 2 Sandboxes exist") || !strings.Contains(out, ns+"/keep-me") ||
		!strings.Contains(out, "helm rollback sandpod 4 -n "+sys) {
		t.Errorf("refuse with 2 Sandboxes: exit %d, want 68, the count, the names and the ways out", code)
	}
	if out, code = check("keep"); code != 0 || !strings.Contains(out, "keeping 2 Sandboxes") {
		t.Errorf("keep: exit %d, want 0", code)
	}
	if out, code = check("delete"); code != 1 || !strings.Contains(out, "forbidden") {
		t.Errorf("delete with refuse's RBAC (list sandboxes only): exit %d, want 1, forbidden", code)
	}
	assertDataKept(t, bed, ns, "data-keep-me", false)

	applyHookRBAC("delete")
	if out, code = check("delete"); code != 0 || !strings.Contains(out, "Sandboxes: all gone") {
		t.Fatalf("delete: exit %d, want 0 and all gone", code)
	}
	sbs, pools := &v1alpha1.SandboxList{}, &v1alpha1.SandboxWarmPoolList{}
	if err := bed.Client.List(ctx, sbs); err != nil || len(sbs.Items) != 0 {
		t.Errorf("Sandboxes after delete: %d, err=%v; want none", len(sbs.Items), err)
	}
	if err := bed.Client.List(ctx, pools); err != nil || len(pools.Items) != 0 {
		t.Errorf("SandboxWarmPools after delete: %d, err=%v; want none", len(pools.Items), err)
	}
	if _, code = check("refuse"); code != 0 {
		t.Errorf("refuse with no Sandbox left: exit %d, want 0", code)
	}
}

// renderHookRBAC renders the chart's uninstall check with helm and returns
// its ServiceAccount, ClusterRole and ClusterRoleBinding (not the Job: the
// test runs the binary itself).
func renderHookRBAC(t *testing.T, ns, mode string) []*unstructured.Unstructured {
	t.Helper()
	helm, err := exec.Command(filepath.Join(harness.RepoRoot(), "hack", "helm.sh"), "--print").Output()
	if err != nil {
		t.Fatalf("hack/helm.sh --print: %v", err)
	}
	out, err := exec.Command(strings.TrimSpace(string(helm)), "template", "sandpod", filepath.Join(harness.RepoRoot(), "deploy", "helm", "sandpod"),
		"-n", ns, "--show-only", "templates/uninstall-check.yaml", "--set", "uninstall.sandboxes="+mode).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var objs []*unstructured.Unstructured
	for _, u := range decodeManifest(t, out) {
		if u.GetKind() != "Job" {
			objs = append(objs, u)
		}
	}
	if len(objs) != 3 {
		t.Fatalf("rendered hook RBAC: %d objects, want a ServiceAccount, a ClusterRole and a binding", len(objs))
	}
	return objs
}
