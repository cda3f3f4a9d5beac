package k8s_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/tests/k8s/harness"
)

// installManifest decodes deploy/install.yaml into its objects, in file
// order.
func installManifest(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "deploy", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
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
