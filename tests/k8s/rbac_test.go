package k8s_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/tests/k8s/harness"
)

// TestControllerRunsWithItsOwnRBAC runs the controller as a user holding
// only the ClusterRole generated from its kubebuilder markers
// (deploy/rbac/role.yaml, the one install.yaml grants) and the Role of its
// own namespace for the agents' bridge CA (deploy/base/rbac.yaml): a
// sandbox with storage and a service, a warm pool and a claim all work,
// without any per-sandbox Secret. The same identity may not read, make,
// list or watch Secrets in the sandboxes' namespaces, nor touch pods'
// specs: the controller holds no tenant Secret rights even if compromised.
func TestControllerRunsWithItsOwnRBAC(t *testing.T) {
	harness.Skip(t, env)
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "deploy", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(role); err != nil {
		t.Fatal(err)
	}
	user := "sandpod-controller-rbac-" + rand.String(6)
	role.Name = user
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	caRole := agentCARole(t)
	caRole.Name = user
	caBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: caRole.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: caRole.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	create(t, role, binding, caRole, caBinding)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, role)
		_ = env.Client.Delete(ctx, caBinding)
		_ = env.Client.Delete(ctx, caRole)
	})

	ns := env.Namespace(t)
	env.StartManager(t, harness.ManagerOptions{Impersonate: user}, ns)
	sb := withStorage(makeSandbox(ns, "scoped"))
	sb.Spec.Service = true
	create(t, sb, makeTemplate(ns, "tpl"), makePool(ns, "pool", "tpl", 1))
	waitSandbox(t, ns, "scoped", "running under the controller's own RBAC", func(sb *v1alpha1.Sandbox) bool {
		return sb.Status.Phase == v1alpha1.SandboxRunning && isReady(sb)
	})
	waitPoolReady(t, ns, "pool", 1, "")
	create(t, makeClaim(ns, "claim", "tpl"))
	waitClaimReady(t, ns, "claim")

	// What the controller's identity may not do.
	cfg := *env.Config
	cfg.Impersonate.UserName = user
	as, err := client.New(&cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity listed Secrets: %v, want Forbidden", err)
	}
	if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "anything"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity read a Secret of a sandbox namespace: %v, want Forbidden", err)
	}
	if err := as.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "planted"}}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity made a Secret in a sandbox namespace: %v, want Forbidden", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.SecretName("scoped")}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a per-sandbox agent Secret: %v, want none", err)
	}
	pod := &corev1.Pod{}
	if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scoped"}, pod); err != nil {
		t.Fatalf("get pod: %v", err)
	}
	pod.Labels["x"] = "y"
	if err := as.Update(ctx, pod); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity updated a pod: %v, want Forbidden", err)
	}
}

// agentCARole is the controller's Role for the bridge CA, from
// deploy/base/rbac.yaml.
func agentCARole(t *testing.T) *rbacv1.Role {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "deploy", "base", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		role := &rbacv1.Role{}
		if err := dec.Decode(role); err != nil {
			t.Fatalf("no Role sandpod-agent-ca in deploy/base/rbac.yaml: %v", err)
		}
		if role.Kind == "Role" && role.Name == "sandpod-agent-ca" {
			role.ResourceVersion = ""
			return role
		}
	}
}
