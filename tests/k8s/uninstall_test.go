package k8s_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

var sandpodCRDs = []string{"sandboxes.sandpod.dev", "sandboxtemplates.sandpod.dev", "sandboxwarmpools.sandpod.dev", "sandboxclaims.sandpod.dev", "sandboxquotas.sandpod.dev", "sandboxsnapshots.sandpod.dev"}

const guardName = "uninstall-guard.sandpod.dev"

// TestGuardedUninstall installs deploy/install.yaml on a kwok bed of its own
// (it deletes the CRDs, which the other tests share), makes a Sandbox with a
// PVC, and then:
//   - deletes every object of install.yaml, as `kubectl delete -f` does: the
//     uninstall guard refuses the CRDs (and goes itself, last), so the
//     Sandbox and its PVC stay;
//   - runs deploy/uninstall.sh with the bed's kubectl: without a choice it
//     refuses and says how many Sandboxes there are; --keep-data keeps them;
//     --delete-data --yes removes everything, the guard last.
//
// Then the guard is applied again, so --keep-data is seen to keep it.
func TestGuardedUninstall(t *testing.T) {
	harness.Skip(t, env)
	kubectl := findKubectl(t)
	bed, err := harness.Start()
	if err != nil {
		t.Fatalf("private kwok bed: %v", err)
	}
	t.Cleanup(bed.Stop) // registered first, so it runs after the manager stops

	objs := applyInstallYAML(t, bed)
	// The API server loads a new policy asynchronously: a dry-run DELETE goes
	// through admission, so poll it until the guard answers.
	harness.Eventually(t, harness.Timeout, "the uninstall guard to refuse a CRD delete", func() (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Name = sandpodCRDs[0]
		err := bed.Client.Delete(ctx, crd, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "uninstall guard"), fmt.Sprintf("err=%v", err)
	})

	ns := bed.Namespace(t)
	bed.StartManager(t, harness.ManagerOptions{}, ns)
	sb := withStorage(makeSandbox(ns, "keep-me"))
	if err := bed.Client.Create(ctx, sb); err != nil {
		t.Fatal(err)
	}
	pvcName := "data-keep-me"
	harness.Eventually(t, harness.Timeout, "the sandbox's PVC", func() (bool, string) {
		err := bed.Get(&corev1.PersistentVolumeClaim{}, ns, pvcName)
		return err == nil, fmt.Sprintf("err=%v", err)
	})

	// The real `kubectl delete -f deploy/install.yaml` (it goes on past
	// refusals, in file order, and fails at the end).
	del := exec.Command(kubectl, "delete", "-f", filepath.Join(harness.RepoRoot(), "deploy", "install.yaml"), "--wait=false")
	del.Env = append(os.Environ(), "KUBECONFIG="+bed.Kubeconfig)
	delOut, err := del.CombinedOutput()
	t.Logf("kubectl delete -f deploy/install.yaml: %v\n%s", err, delOut)
	var refusals []string
	for _, l := range strings.Split(string(delOut), "\n") {
		if strings.Contains(l, "uninstall guard") {
			refusals = append(refusals, l)
		}
	}
	if err == nil || len(refusals) != len(sandpodCRDs) {
		t.Errorf("kubectl delete -f: err=%v and %d refusals by the guard, want an error and %d", err, len(refusals), len(sandpodCRDs))
	}
	for _, n := range sandpodCRDs {
		if !strings.Contains(strings.Join(refusals, "\n"), n) {
			t.Errorf("kubectl delete -f: CRD %s not refused by the guard", n)
		}
	}
	// Admission policies are exempt from admission policies, so the guard,
	// after the CRDs in the file, went last; the data it guarded stays.
	assertDataKept(t, bed, ns, pvcName, false)
	// Put the guard back, as docs/install.md says to after such a delete.
	for _, u := range objs {
		if strings.HasPrefix(u.GetKind(), "ValidatingAdmissionPolicy") {
			u.SetResourceVersion("")
			u.SetManagedFields(nil)
			u.SetUID("")
			if err := bed.Client.Patch(ctx, u, client.Apply, client.FieldOwner("uninstall-test"), client.ForceOwnership); err != nil {
				t.Fatalf("re-apply %s: %v", u.GetKind(), err)
			}
		}
	}

	// The guided uninstall without a choice refuses and counts.
	out, code := runUninstall(t, bed, kubectl)
	if code != 2 || !strings.Contains(out, "1 Sandboxes exist") || !strings.Contains(out, "--delete-data") {
		t.Fatalf("uninstall.sh with a Sandbox: exit %d, want 2 and the count; output:\n%s", code, out)
	}
	assertDataKept(t, bed, ns, pvcName, true)

	// SANDPOD_NAMESPACE is the clients' and CLI's namespace of sandboxes: an
	// operator may well have it set to a tenant's namespace, which the
	// script must then not take for sandpod's own and delete.
	out, code = runUninstall(t, bed, kubectl, "SANDPOD_NAMESPACE="+ns, "--keep-data")
	if code != 0 || !strings.Contains(out, "kept") {
		t.Fatalf("uninstall.sh --keep-data: exit %d; output:\n%s", code, out)
	}
	assertDataKept(t, bed, ns, pvcName, true)
	var tenant corev1.Namespace
	if err := bed.Get(&tenant, "", ns); err != nil || tenant.DeletionTimestamp != nil {
		t.Fatalf("uninstall.sh --keep-data with SANDPOD_NAMESPACE=%s deleted that namespace (err %v)", ns, err)
	}

	out, code = runUninstall(t, bed, kubectl, "--delete-data", "--yes")
	if code != 0 || !strings.Contains(out, "sandpod uninstalled") {
		t.Fatalf("uninstall.sh --delete-data --yes: exit %d; output:\n%s", code, out)
	}
	for _, n := range sandpodCRDs {
		harness.Eventually(t, harness.Timeout, "CRD "+n+" to be gone", func() (bool, string) {
			err := bed.Get(&apiextensionsv1.CustomResourceDefinition{}, "", n)
			return isNotFound(err), fmt.Sprintf("err=%v", err)
		})
	}
	for _, o := range []client.Object{&admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}} {
		if err := bed.Get(o, "", guardName); !isNotFound(err) {
			t.Errorf("%T %s after uninstall: err=%v, want NotFound", o, guardName, err)
		}
	}
	for _, o := range []client.Object{&flowcontrolv1.FlowSchema{}, &flowcontrolv1.PriorityLevelConfiguration{}} {
		for _, name := range []string{"sandpod-claims", "sandpod-refills"} {
			if err := bed.Get(o, "", name); !isNotFound(err) {
				t.Errorf("%T %s after uninstall: err=%v, want NotFound", o, name, err)
			}
		}
	}
	// The kwok bed has no kube-controller-manager to drop the PVC's
	// pvc-protection finalizer: deleted is as far as it can go here.
	pvc := &corev1.PersistentVolumeClaim{}
	if err := bed.Get(pvc, ns, pvcName); err == nil && pvc.DeletionTimestamp == nil {
		t.Errorf("PVC %s not deleted by uninstall --delete-data", pvcName)
	}
}

// findKubectl is the kubectl the bed's Kubernetes build made (or $KUBECTL,
// or one on PATH).
func findKubectl(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if k := filepath.Join(os.Getenv(harness.EnvBin), "kubectl"); fileExists(k) {
		return k
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("no kubectl for deploy/uninstall.sh: run hack/kube/build.sh (it links kubectl into %s) or set KUBECTL", os.Getenv(harness.EnvBin))
	}
	return k
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// applyInstallYAML server-side applies deploy/install.yaml and returns its
// objects in file order.
func applyInstallYAML(t *testing.T, bed *harness.Env) []*unstructured.Unstructured {
	t.Helper()
	objs := installManifest(t)
	serverSideApply(t, bed, "uninstall-test", objs)
	return objs
}

// assertDataKept checks that the CRDs, the guard, the Sandbox and its PVC are
// all there and none is being deleted.
func assertDataKept(t *testing.T, bed *harness.Env, ns, pvcName string, guard bool) {
	t.Helper()
	check := func(o client.Object, ns, name string) {
		if err := bed.Get(o, ns, name); err != nil {
			t.Fatalf("%T %s: %v (want it kept)", o, name, err)
		}
		if o.GetDeletionTimestamp() != nil {
			t.Fatalf("%T %s is being deleted (want it kept)", o, name)
		}
	}
	for _, n := range sandpodCRDs {
		check(&apiextensionsv1.CustomResourceDefinition{}, "", n)
	}
	if guard {
		check(&admissionv1.ValidatingAdmissionPolicy{}, "", guardName)
		check(&admissionv1.ValidatingAdmissionPolicyBinding{}, "", guardName)
	}
	check(&v1alpha1.Sandbox{}, ns, "keep-me")
	check(&corev1.PersistentVolumeClaim{}, ns, pvcName)
}

// runUninstall runs deploy/uninstall.sh against bed and returns its combined
// output and exit code. Leading NAME=VALUE arguments go to its environment.
func runUninstall(t *testing.T, bed *harness.Env, kubectl string, args ...string) (string, int) {
	t.Helper()
	env := append(os.Environ(), "KUBECTL="+kubectl, "KUBECONFIG="+bed.Kubeconfig)
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		env, args = append(env, args[0]), args[1:]
	}
	cmd := exec.Command(filepath.Join(harness.RepoRoot(), "deploy", "uninstall.sh"), args...)
	cmd.Env = env
	cmd.Stdin = nil // not a terminal: the script must not prompt
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run uninstall.sh: %v", err)
	}
	code := 0
	if ee != nil {
		code = ee.ExitCode()
	}
	t.Logf("uninstall.sh %s: exit %d\n%s", strings.Join(args, " "), code, out)
	return string(out), code
}
