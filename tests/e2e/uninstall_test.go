package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// sandpodCRDs are the CRDs of install.yaml, each guarded by the uninstall
// guard (deploy/guard).
var sandpodCRDs = []string{"sandboxes.sandpod.dev", "sandboxtemplates.sandpod.dev", "sandboxwarmpools.sandpod.dev",
	"sandboxclaims.sandpod.dev", "sandboxquotas.sandpod.dev", "sandboxsnapshots.sandpod.dev"}

const uninstallGuard = "uninstall-guard.sandpod.dev"

// TestGuardedUninstallOnNodeBed: on the real bed, with a sandbox claimed
// through the bridge that keeps a file on its PVC,
//   - `kubectl delete -f deploy/install.yaml` removes the controller, the
//     bridge and their namespace, but the uninstall guard refuses every CRD,
//     so the Sandbox, its PVC and its pod stay;
//   - installing again as make e2e does gives the sandbox back through the
//     bridge, file and all;
//   - deploy/uninstall.sh counts (--dry-run), refuses while the Sandbox
//     exists, and with --delete-data --yes removes the Sandboxes, their
//     PVCs, the CRDs and the guard.
//
// Then it installs sandpod again as make e2e did (CRDs, guard, controller,
// bridge, its Secrets) and claims a sandbox, so the tests that run after it
// find a whole install; a cleanup does the same when the test fails half
// way. Not parallel: it removes what every other test uses (parallel tests
// wait for it).
func TestGuardedUninstallOnNodeBed(t *testing.T) {
	env := Setup(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	installYAML := filepath.Join(root, "deploy", "install.yaml")
	ns := env.Namespace(t)
	// Registered after Namespace, so it runs first: the namespace's cleanup
	// needs the CRDs and the controller back.
	restored := false
	t.Cleanup(func() {
		if !restored {
			reinstallAsE2E(t, env, installYAML)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*Timeout)
	defer cancel()

	tmpl := WithVolume(Template(ns, "python-pvc", PythonImage), "workspace", "/workspace")
	env.Apply(t, tmpl)
	c := env.bridgeClient(t, ns)
	sb, err := c.Claim(ctx, "python-pvc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Files().WriteFile(ctx, "kept.txt", []byte("survives the uninstall")); err != nil {
		t.Fatal(err)
	}
	_ = c.Close() // its bridge is about to go
	pod := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name()))
	pvcs := sandboxPVCs(ctx, t, env, ns)
	if len(pvcs) != 1 {
		t.Fatalf("PVCs of the sandbox: %v, want one", pvcs)
	}

	// The operator's mistake: delete everything install.yaml made. kubectl
	// goes on past the refusals, in file order, and fails at the end.
	out, err := env.RunKubectl(ctx, "delete", "-f", installYAML, "--ignore-not-found")
	t.Logf("kubectl delete -f deploy/install.yaml: %v\n%s", err, out)
	if err == nil {
		t.Errorf("kubectl delete -f deploy/install.yaml succeeded; want the guard to refuse the CRDs")
	}
	for _, crd := range sandpodCRDs {
		if !refusedByGuard(err, crd) {
			t.Errorf("kubectl delete -f: CRD %s not refused by the uninstall guard", crd)
		}
	}
	// The controller and bridge are gone (their namespace with them) ...
	env.Eventually(t, "namespace sandpod-system gone", func() (bool, string) {
		err := env.Client.Get(ctx, objKey("", helmNamespace), &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprintf("err=%v", err)
	})
	// ... and the data stays: CRDs, Sandbox, its PVC, and its pod, which
	// nothing is left to delete.
	for _, crd := range sandpodCRDs {
		if out, err := env.RunKubectl(ctx, "get", "crd", crd, "-o", "jsonpath={.metadata.deletionTimestamp}"); err != nil || out != "" {
			t.Errorf("CRD %s after kubectl delete -f: %v, deletionTimestamp %q; want it kept", crd, err, out)
		}
	}
	assertKept(ctx, t, env, &v1alpha1.Sandbox{}, ns, sb.Name())
	for _, p := range pvcs {
		assertKept(ctx, t, env, &corev1.PersistentVolumeClaim{}, ns, p)
	}
	after := &corev1.Pod{}
	assertKept(ctx, t, env, after, ns, pod.Name)
	if after.UID != pod.UID {
		t.Errorf("the sandbox's pod was replaced (uid %s, was %s) with no controller installed", after.UID, pod.UID)
	}

	// Installed again as make e2e does, the sandbox is there with its file.
	reinstallAsE2E(t, env, installYAML)
	c = env.bridgeClient(t, ns)
	got, err := c.Get(ctx, sb.Name())
	if err != nil {
		t.Fatalf("the sandbox through the reinstalled bridge: %v", err)
	}
	// The namespace took the agents' CA with it: the reinstalled controller
	// made a new one and replaces the pod, whose agent trusts the old one
	// (AgentCAChanged); the workspace volume stays.
	env.Eventually(t, "kept.txt through the reinstalled bridge", func() (bool, string) {
		data, err := got.Files().ReadFile(ctx, "kept.txt")
		return err == nil && string(data) == "survives the uninstall", fmt.Sprintf("%q, %v", data, err)
	})
	_ = c.Close()
	if p := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name())); p.UID != pod.UID {
		t.Logf("note: the reinstalled controller replaced the sandbox's pod (uid %s, was %s)", p.UID, pod.UID)
	}

	// The guided uninstall. Every Sandbox of the cluster counts (there
	// should be only this one: the parallel tests have not started).
	sandboxes := &v1alpha1.SandboxList{}
	if err := env.Client.List(ctx, sandboxes); err != nil {
		t.Fatal(err)
	}
	n := len(sandboxes.Items)
	script := filepath.Join(root, "deploy", "uninstall.sh")
	out, code := runUninstallScript(ctx, t, env, script, "--dry-run")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("sandboxes.sandpod.dev: %d\n", n)) ||
		!strings.Contains(out, ns+"/"+sb.Name()) || !strings.Contains(out, "nothing deleted") {
		t.Errorf("uninstall.sh --dry-run: exit %d; want 0, the count %d and %s/%s listed", code, n, ns, sb.Name())
	}
	out, code = runUninstallScript(ctx, t, env, script)
	if code != 2 || !strings.Contains(out, fmt.Sprintf("refusing: %d Sandboxes exist", n)) || !strings.Contains(out, "--delete-data") {
		t.Fatalf("uninstall.sh with %d Sandboxes: exit %d; want 2 and the count", n, code)
	}
	// Told to delete the data, but not at a terminal and without --yes: no.
	out, code = runUninstallScript(ctx, t, env, script, "--delete-data")
	if code != 1 || !strings.Contains(out, "not a terminal") {
		t.Errorf("uninstall.sh --delete-data without --yes, no terminal: exit %d; want 1 and a refusal", code)
	}
	assertKept(ctx, t, env, &v1alpha1.Sandbox{}, ns, sb.Name())

	out, code = runUninstallScript(ctx, t, env, script, "--delete-data", "--yes")
	if code != 0 || !strings.Contains(out, "sandpod uninstalled") {
		t.Fatalf("uninstall.sh --delete-data --yes: exit %d; want 0", code)
	}
	for _, crd := range sandpodCRDs {
		env.Eventually(t, "CRD "+crd+" gone", func() (bool, string) {
			out, err := env.RunKubectl(ctx, "get", "crd", crd, "--ignore-not-found", "-o", "name")
			return err == nil && out == "", fmt.Sprintf("%q, %v", out, err)
		})
	}
	env.Eventually(t, "the sandbox's PVCs and pod gone", func() (bool, string) {
		left := sandboxPVCs(ctx, t, env, ns)
		err := env.Client.Get(ctx, objKey(ns, pod.Name), &corev1.Pod{})
		return len(left) == 0 && apierrors.IsNotFound(err), fmt.Sprintf("PVCs %v, pod: %v", left, err)
	})
	for _, kind := range []string{"validatingadmissionpolicy", "validatingadmissionpolicybinding"} {
		if out, err := env.RunKubectl(ctx, "get", kind, uninstallGuard, "--ignore-not-found", "-o", "name"); err != nil || out != "" {
			t.Errorf("%s %s after uninstall: %q, %v; want it gone", kind, uninstallGuard, out, err)
		}
	}
	env.Eventually(t, "namespace sandpod-system gone", func() (bool, string) {
		err := env.Client.Get(ctx, objKey("", helmNamespace), &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprintf("err=%v", err)
	})
	env.FreeReleasedPVs(ctx, ns)

	// Back to the install make e2e made, for the tests after this one; a
	// claim through the bridge shows it whole.
	restored = true
	reinstallAsE2E(t, env, installYAML)
	if t.Failed() {
		return
	}
	env.Apply(t, Template(ns, "python", PythonImage))
	c = env.bridgeClient(t, ns)
	again, err := c.Claim(ctx, "python")
	if err != nil {
		t.Fatalf("claim after the reinstall: %v", err)
	}
	res, err := again.Run(ctx, "echo whole")
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "whole\n" {
		t.Errorf("exec after the reinstall = %+v, %v", res, err)
	}
	if err := again.Delete(ctx); err != nil {
		t.Error(err)
	}
}

// refusedByGuard reports whether a kubectl error names crd as refused by
// the uninstall guard.
func refusedByGuard(err error, crd string) bool {
	if err == nil {
		return false
	}
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.Contains(l, "uninstall guard") && strings.Contains(l, crd) {
			return true
		}
	}
	return false
}

// sandboxPVCs names the PVCs of ns's sandboxes (label sandpod.dev/sandbox,
// the one deploy/uninstall.sh counts).
func sandboxPVCs(ctx context.Context, t *testing.T, env *Env, ns string) []string {
	t.Helper()
	l := &corev1.PersistentVolumeClaimList{}
	if err := env.Client.List(ctx, l, client.InNamespace(ns), client.HasLabels{"sandpod.dev/sandbox"}); err != nil {
		t.Fatalf("list PVCs: %v", err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// assertKept fails t unless the object exists and is not being deleted.
func assertKept(ctx context.Context, t *testing.T, env *Env, o client.Object, ns, name string) {
	t.Helper()
	if err := env.Client.Get(ctx, objKey(ns, name), o); err != nil {
		t.Fatalf("%T %s/%s: %v (want it kept)", o, ns, name, err)
	}
	if o.GetDeletionTimestamp() != nil {
		t.Fatalf("%T %s/%s is being deleted (want it kept)", o, ns, name)
	}
}

// runUninstallScript runs deploy/uninstall.sh with the bed's kubectl, not at
// a terminal, and returns its output and exit code.
func runUninstallScript(ctx context.Context, t *testing.T, env *Env, script string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), "KUBECTL="+env.Kubectl, "KUBECONFIG="+env.Kubeconfig)
	cmd.Stdin = nil // /dev/null: the script must not prompt
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

// reinstallAsE2E installs sandpod as hack/testbed/e2e.sh does, whatever
// state it finds: once sandpod-system is gone (or not terminating),
// install.yaml applied server-side, the bridge's token and preview-key
// Secrets created when missing, both Deployments rolled out and Available,
// and the uninstall guard answering again.
func reinstallAsE2E(t *testing.T, env *Env, installYAML string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*Timeout)
	defer cancel()
	if err := poll(ctx, func() (bool, string) {
		ns := &corev1.Namespace{}
		err := env.Client.Get(ctx, objKey("", helmNamespace), ns)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return err == nil && ns.DeletionTimestamp == nil, fmt.Sprintf("err=%v, deleting=%v", err, ns.DeletionTimestamp != nil)
	}); err != nil {
		t.Errorf("reinstall: namespace %s still terminating: %v", helmNamespace, err)
		return
	}
	if out, err := env.RunKubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", installYAML); err != nil {
		t.Errorf("reinstall: %v\n%s", err, out)
		return
	}
	for name, key := range map[string]string{bridgeTokenSecret: "tokens", "sandpod-bridge-preview-key": "key"} {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: helmNamespace, Name: name},
			Data:       map[string][]byte{key: []byte(randomHex(t))},
		}
		if err := env.Client.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("reinstall: secret %s: %v", name, err)
		}
	}
	for _, d := range []string{"sandpod-controller", "sandpod-bridge"} {
		if out, err := env.RunKubectl(ctx, "-n", helmNamespace, "rollout", "status", "deployment/"+d, "--timeout", (2 * Timeout).String()); err != nil {
			t.Errorf("reinstall: %v\n%s", err, out)
		}
		if err := poll(ctx, func() (bool, string) {
			dep := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, objKey(helmNamespace, d), dep); err != nil {
				return false, err.Error()
			}
			return dep.Status.AvailableReplicas > 0 && dep.Status.UpdatedReplicas == dep.Status.Replicas, fmt.Sprintf("%+v", dep.Status)
		}); err != nil {
			t.Errorf("reinstall: deployment %s not Available: %v", d, err)
		}
	}
	// The API server loads a new policy asynchronously: a server-side dry
	// run of a CRD delete goes through admission, so poll it until the
	// guard answers.
	if err := poll(ctx, func() (bool, string) {
		_, err := env.RunKubectl(ctx, "delete", "crd", sandpodCRDs[0], "--dry-run=server")
		return refusedByGuard(err, sandpodCRDs[0]), fmt.Sprintf("err=%v", err)
	}); err != nil {
		t.Errorf("reinstall: the uninstall guard does not refuse a CRD delete: %v", err)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
