package k8s_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/hack/kube/harness"
)

// installManifest decodes deploy/install.yaml into its objects, in file
// order.
func installManifest(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "deploy", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return decodeManifest(t, b)
}

// decodeManifest decodes a multi-document YAML manifest (a file, kubectl
// kustomize's or helm template's output) into its objects, in order,
// empty documents left out.
func decodeManifest(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// serverSideApply applies objs to bed as fieldOwner, as `kubectl apply
// --server-side` does.
func serverSideApply(t *testing.T, bed *harness.Env, fieldOwner string, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if err := bed.Client.Patch(ctx, u, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// TestInstallManifestApplies server-side applies deploy/install.yaml, as
// `kubectl apply --server-side -f deploy/install.yaml` does.
func TestInstallManifestApplies(t *testing.T) {
	harness.Skip(t, env)
	objs := installManifest(t)
	serverSideApply(t, env, "install-test", objs)
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
	}
	for k, want := range map[string]int{"CustomResourceDefinition": 6, "Deployment": 2, "Service": 3, "ServiceAccount": 2, "ClusterRole": 2, "ClusterRoleBinding": 2, "Namespace": 1, "FlowSchema": 2, "PriorityLevelConfiguration": 2} {
		if kinds[k] != want {
			t.Errorf("%d %s in install.yaml, want %d", kinds[k], k, want)
		}
	}
}

// deploy/crd/kustomization.yaml is written by hand, the CRDs beside it are
// generated: `kubectl apply -k deploy/base` must install every one of them
// (the bridge does not start without the SandboxQuota CRD, for one). Needs
// no bed.
func TestKustomizationListsEveryCRD(t *testing.T) {
	dir := filepath.Join(harness.RepoRoot(), "deploy", "crd")
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "sandpod.dev_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in deploy/crd: %v", err)
	}
	for _, f := range files {
		if !bytes.Contains(b, []byte("\n- "+filepath.Base(f)+"\n")) {
			t.Errorf("deploy/crd/kustomization.yaml does not list %s", filepath.Base(f))
		}
	}
}

// An overlay that installs sandpod in another namespace (`namespace:` in its
// kustomization) must move every reference to sandpod's service accounts
// along, the FlowSchemas' subjects included (deploy/base/kustomizeconfig.yaml):
// with the old namespace left there, the controller's and the bridge's
// requests fall to kube-apiserver's default priority level and claims are no
// longer kept ahead of refills. Renders with the bed's kubectl.
func TestKustomizeOverlayMovesEveryServiceAccountReference(t *testing.T) {
	harness.Skip(t, env)
	kubectl := findKubectl(t)
	overlay := t.TempDir()
	base, err := filepath.Abs(filepath.Join(harness.RepoRoot(), "deploy", "base"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: tenant-ops\nresources:\n- " + rel + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "kustomize", overlay).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("sandpod-system")) {
		i := bytes.Index(out, []byte("sandpod-system"))
		t.Errorf("the overlay's objects still name sandpod-system, e.g. …%s…", out[max(0, i-300):min(len(out), i+40)])
	}
	subjects := 0
	for _, u := range decodeManifest(t, out) {
		if u.GetKind() != "FlowSchema" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		for _, r := range rules {
			subs, _, _ := unstructured.NestedSlice(r.(map[string]any), "subjects")
			for _, s := range subs {
				ns, _, _ := unstructured.NestedString(s.(map[string]any), "serviceAccount", "namespace")
				subjects++
				if ns != "tenant-ops" {
					t.Errorf("FlowSchema %s: a subject's service account is in %q, want tenant-ops", u.GetName(), ns)
				}
			}
		}
	}
	if subjects != 3 {
		t.Errorf("%d service account subjects in the FlowSchemas, want 3 (the bridge's, the controller's twice)", subjects)
	}
}
