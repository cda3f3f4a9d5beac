package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// EnvHelm names the helm binary (default: hack/helm.sh --print, which
// builds it once from its Go module).
const EnvHelm = "SANDPOD_E2E_HELM"

const (
	helmRelease   = "sandpod"
	helmNamespace = "sandpod-system" // where make e2e installed deploy/install.yaml
)

// The chart installed, upgraded and uninstalled with helm on the bed. The
// bed runs sandpod from deploy/install.yaml; the test moves that install
// under Helm the way docs/install.md tells an operator to (label and
// annotate its objects so `helm install` adopts them), checks a sandbox is
// made under the Helm release, upgrades it, uninstalls it, and puts
// install.yaml back for the other tests. The uninstall check (a pre-delete
// hook): with a Sandbox present helm uninstall refuses and says how many;
// with uninstall.sandboxes=keep it goes on and the Sandbox and its PVC
// stay; a fresh install with delete removes them. Not parallel: it replaces the
// controller and bridge every other test uses (parallel tests wait for it).
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	env := Setup(t)
	helm := helmBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "deploy", "helm", "sandpod")
	// Three installs and uninstalls and two upgrades and a rollback, each
	// waiting for rollouts: longer than Context's deadline. Canceled in a
	// cleanup registered before the restore's, so that runs first.
	ctx, cancel := context.WithTimeout(context.Background(), 8*Timeout)
	t.Cleanup(cancel)
	helmHome := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", env.Kubeconfig)...)
		// Helm's own cache and config go to the test's directory.
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+helmHome+"/cache",
			"HELM_CONFIG_HOME="+helmHome+"/config", "HELM_DATA_HOME="+helmHome+"/data")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return out.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return out.String(), nil
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The namespace of the sandbox the uninstall check finds. Made before
	// the restore is registered, so that the restore runs first: the
	// namespace's cleanup needs a controller to finalize its sandbox.
	dataNS := env.Namespace(t)
	t.Cleanup(func() { restoreInstallYAML(t, env, run, filepath.Join(root, "deploy", "install.yaml")) })

	keyBefore := previewKey(ctx, t, env)

	// Adopt: Helm takes over objects that name its release.
	rendered := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(rendered, []byte(must("template", helmRelease, chart, "-n", helmNamespace, "--no-hooks")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := env.RunKubectl(ctx, "label", "--overwrite", "-f", rendered, "app.kubernetes.io/managed-by=Helm"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := env.RunKubectl(ctx, "annotate", "--overwrite", "-f", rendered,
		"meta.helm.sh/release-name="+helmRelease, "meta.helm.sh/release-namespace="+helmNamespace); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	must("install", helmRelease, chart, "-n", helmNamespace, "--wait", "--timeout", "5m")
	ctrl := deployment(ctx, t, env, "sandpod-controller")
	if got := ctrl.Labels["helm.sh/chart"]; !strings.HasPrefix(got, "sandpod-") {
		t.Errorf("controller Deployment label helm.sh/chart = %q after helm install, want sandpod-<version>", got)
	}
	if got := previewKey(ctx, t, env); !bytes.Equal(got, keyBefore) {
		t.Errorf("helm install replaced the existing preview key (it must keep it: signed links would break)")
	}
	t.Run("sandbox under the installed release", func(t *testing.T) { claimAndExec(t, env, "installed") })

	must("upgrade", helmRelease, chart, "-n", helmNamespace, "--wait", "--timeout", "5m",
		"--set", "bridge.replicas=2", "--set", "workers=4")
	if b := deployment(ctx, t, env, "sandpod-bridge"); b.Spec.Replicas == nil || *b.Spec.Replicas != 2 || b.Status.AvailableReplicas != 2 {
		t.Errorf("bridge after upgrade with bridge.replicas=2: spec %v, available %d", b.Spec.Replicas, b.Status.AvailableReplicas)
	}
	if args := deployment(ctx, t, env, "sandpod-controller").Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--workers=4") {
		t.Errorf("controller args after upgrade with workers=4: %v", args)
	}
	if out := must("history", helmRelease, "-n", helmNamespace, "--max", "1"); !strings.Contains(out, "deployed") || !strings.Contains(out, "\n2") {
		t.Errorf("helm history after the upgrade, want revision 2 deployed:\n%s", out)
	}
	t.Run("sandbox under the upgraded release", func(t *testing.T) { claimAndExec(t, env, "upgraded") })

	// helm uninstall with a Sandbox (and its PVC) present: the pre-delete
	// hook refuses, says how many, and Helm deletes nothing.
	env.Apply(t, WithVolume(Template(dataNS, "python-pvc", PythonImage), "workspace", "/workspace"))
	_, sb := env.Claim(t, dataNS, "data", "python-pvc")
	pvcs := sandboxPVCs(ctx, t, env, dataNS)
	if len(pvcs) != 1 {
		t.Fatalf("PVCs of the sandbox: %v, want one", pvcs)
	}
	all := &v1alpha1.SandboxList{}
	if err := env.Client.List(ctx, all); err != nil {
		t.Fatal(err)
	}
	_, err = run("uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout", "5m")
	t.Logf("helm uninstall with %d Sandboxes: %v", len(all.Items), err)
	want := fmt.Sprintf("refusing: %d Sandbox", len(all.Items))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("helm uninstall with %d Sandboxes: %v; want it refused, the hook's log saying %q", len(all.Items), err, want)
	}
	deployment(ctx, t, env, "sandpod-controller") // still there
	assertHookGone(ctx, t, env, false)
	// The ways out the refusal prints: keep (here) through the values, after
	// a rollback to the same revision (the refusal left the release
	// "uninstalling", which helm upgrade will not upgrade).
	rev := regexp.MustCompile(`helm rollback ` + helmRelease + ` (\d+) -n ` + helmNamespace).FindStringSubmatch(err.Error())
	if rev == nil {
		t.Fatalf("the refusal prints no rollback command:\n%v", err)
	}
	must("rollback", helmRelease, rev[1], "-n", helmNamespace, "--wait", "--timeout", "5m")
	must("upgrade", helmRelease, chart, "-n", helmNamespace, "--reuse-values", "--set", "uninstall.sandboxes=keep", "--wait", "--timeout", "5m")

	must("uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout", "5m")
	for _, name := range []string{"sandpod-controller", "sandpod-bridge"} {
		if err := env.Client.Get(ctx, objKey(helmNamespace, name), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment %s after helm uninstall: %v, want NotFound", name, err)
		}
		if err := env.Client.Get(ctx, objKey("", name), &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
			t.Errorf("ClusterRole %s after helm uninstall: %v, want NotFound", name, err)
		}
	}
	assertHookGone(ctx, t, env, true)
	// Helm never deletes the CRDs of crds/ (and so not the users' sandboxes),
	// and keeps the preview key (resource-policy keep); keep kept the
	// sandbox and its PVC.
	if _, err := env.RunKubectl(ctx, "get", "crd", "sandboxes.sandpod.dev"); err != nil {
		t.Errorf("CRD sandboxes.sandpod.dev after helm uninstall: %v (Helm must leave it)", err)
	}
	if got := previewKey(ctx, t, env); !bytes.Equal(got, keyBefore) {
		t.Errorf("preview key after helm uninstall changed or is gone (resource-policy keep)")
	}
	assertKept(ctx, t, env, &v1alpha1.Sandbox{}, dataNS, sb.Name)
	assertKept(ctx, t, env, &corev1.PersistentVolumeClaim{}, dataNS, pvcs[0])

	// A fresh install told to delete: helm uninstall deletes the claim, the
	// sandbox and (by owner reference) its PVC while its controller still
	// runs, then the rest.
	must("install", helmRelease, chart, "-n", helmNamespace, "--set", "uninstall.sandboxes=delete", "--wait", "--timeout", "5m")
	must("uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout", "5m")
	if err := env.Client.Get(ctx, objKey(dataNS, sb.Name), &v1alpha1.Sandbox{}); !apierrors.IsNotFound(err) {
		t.Errorf("Sandbox %s after helm uninstall with uninstall.sandboxes=delete: %v, want NotFound", sb.Name, err)
	}
	env.Eventually(t, "the sandbox's PVC gone", func() (bool, string) {
		err := env.Client.Get(ctx, objKey(dataNS, pvcs[0]), &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(err), fmt.Sprintf("err=%v", err)
	})
	assertHookGone(ctx, t, env, true)
}

// assertHookGone checks that the uninstall check's RBAC is gone (it goes
// when the hook passes or fails) and, with job, its Job too (it stays
// after a refusal, for its log, until the next try).
func assertHookGone(ctx context.Context, t *testing.T, env *Env, job bool) {
	t.Helper()
	const name = "sandpod-uninstall-check"
	objs := []client.Object{&corev1.ServiceAccount{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}}
	if job {
		objs = append(objs, &batchv1.Job{})
	}
	for _, o := range objs {
		ns := helmNamespace
		switch o.(type) {
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			ns = ""
		}
		env.Eventually(t, fmt.Sprintf("hook object %T %s gone", o, name), func() (bool, string) {
			err := env.Client.Get(ctx, objKey(ns, name), o)
			return apierrors.IsNotFound(err), fmt.Sprintf("err=%v", err)
		})
	}
}

func helmBinary(t *testing.T) string {
	if p := os.Getenv(EnvHelm); p != "" {
		return p
	}
	out, err := exec.Command("../../hack/helm.sh", "--print").Output()
	if err != nil {
		t.Fatalf("hack/helm.sh --print: %v (or set %s)", err, EnvHelm)
	}
	return strings.TrimSpace(string(out))
}

func claimAndExec(t *testing.T, env *Env, word string) {
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage))
	_, sb := env.Claim(t, ns, "job", "python")
	res, err := env.Agent(t, sb).Shell(Context(t), "echo "+word)
	if err != nil || res.ExitCode != 0 || res.Stdout != word+"\n" {
		t.Errorf("exec in a sandbox made under the Helm release = %+v, %v", res, err)
	}
}

func deployment(ctx context.Context, t *testing.T, env *Env, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, objKey(helmNamespace, name), d); err != nil {
		t.Fatalf("Deployment %s: %v", name, err)
	}
	return d
}

func previewKey(ctx context.Context, t *testing.T, env *Env) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, objKey(helmNamespace, "sandpod-bridge-preview-key"), s); err != nil {
		t.Fatalf("preview key Secret: %v", err)
	}
	return s.Data["key"]
}

// restoreInstallYAML puts back what make e2e installed, whatever state the
// test left: no Helm release, install.yaml applied, both Deployments rolled
// out.
func restoreInstallYAML(t *testing.T, env *Env, helm func(...string) (string, error), installYAML string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*Timeout)
	defer cancel()
	if _, err := helm("status", helmRelease, "-n", helmNamespace); err == nil {
		// --no-hooks: a failed test may leave Sandboxes, which the
		// uninstall check would refuse; their namespaces' cleanup deletes them.
		if _, err := helm("uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout", "5m", "--no-hooks"); err != nil {
			t.Errorf("restore: %v", err)
		}
	}
	if out, err := env.RunKubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", installYAML); err != nil {
		t.Errorf("restore: %v\n%s", err, out)
		return
	}
	for _, d := range []string{"sandpod-controller", "sandpod-bridge"} {
		if out, err := env.RunKubectl(ctx, "-n", helmNamespace, "rollout", "status", "deployment/"+d, "--timeout", (2 * Timeout).String()); err != nil {
			t.Errorf("restore: %v\n%s", err, out)
		}
	}
	// The bridge's clients reconnect; give the Service endpoints a moment
	// by waiting for the bridge to be Available.
	env.Eventually(t, "bridge Available after restore", func() (bool, string) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, objKey(helmNamespace, "sandpod-bridge"), d); err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas > 0 && d.Status.UpdatedReplicas == d.Status.Replicas,
			fmt.Sprintf("%+v", d.Status)
	})
}

func objKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
