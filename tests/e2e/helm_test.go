package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// install.yaml back for the other tests. Not parallel: it replaces the
// controller and bridge every other test uses (parallel tests wait for it).
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	env := Setup(t)
	helm := helmBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "deploy", "helm", "sandpod")
	ctx := Context(t)
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
	t.Cleanup(func() { restoreInstallYAML(t, env, run, filepath.Join(root, "deploy", "install.yaml")) })

	keyBefore := previewKey(ctx, t, env)

	// Adopt: Helm takes over objects that name its release.
	rendered := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(rendered, []byte(must("template", helmRelease, chart, "-n", helmNamespace, "--skip-tests")), 0o600); err != nil {
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

	must("uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout", "5m")
	for _, name := range []string{"sandpod-controller", "sandpod-bridge"} {
		if err := env.Client.Get(ctx, objKey(helmNamespace, name), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment %s after helm uninstall: %v, want NotFound", name, err)
		}
		if err := env.Client.Get(ctx, objKey("", name), &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
			t.Errorf("ClusterRole %s after helm uninstall: %v, want NotFound", name, err)
		}
	}
	// Helm never deletes the CRDs of crds/ (and so not the users' sandboxes),
	// and keeps the preview key (resource-policy keep).
	if _, err := env.RunKubectl(ctx, "get", "crd", "sandboxes.sandpod.dev"); err != nil {
		t.Errorf("CRD sandboxes.sandpod.dev after helm uninstall: %v (Helm must leave it)", err)
	}
	if got := previewKey(ctx, t, env); !bytes.Equal(got, keyBefore) {
		t.Errorf("preview key after helm uninstall changed or is gone (resource-policy keep)")
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
		if _, err := helm("uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout", "5m"); err != nil {
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
