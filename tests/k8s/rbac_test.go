package k8s_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/bridge/kube"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
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

// TestBridgeRunsWithoutTenantSecretRights runs the bridge's backend as a
// user holding only the bridge's ClusterRole of install.yaml: it syncs its
// caches and answers, it may not read a Secret in a sandbox's namespace
// (its old cluster-wide `get secrets` is gone: the bridge faces every
// client, and a bridge taken over could read any Secret of the cluster),
// and a sandbox whose pod an earlier controller made (status without
// agentAuth) is refused with AGENT_LEGACY_POD instead of being reached
// through a Secret.
func TestBridgeRunsWithoutTenantSecretRights(t *testing.T) {
	harness.Skip(t, env)
	var role *rbacv1.ClusterRole
	for _, u := range installManifest(t) {
		if u.GetKind() == "ClusterRole" && u.GetName() == "sandpod-bridge" {
			role = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole sandpod-bridge in install.yaml")
	}
	user := "sandpod-bridge-rbac-" + rand.String(6)
	role.ObjectMeta = metav1.ObjectMeta{Name: user}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	create(t, role, binding)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, role)
	})
	ns := env.Namespace(t)
	cfg := *env.Config
	cfg.Impersonate.UserName = user
	as, err := client.New(&cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.SecretName("old")},
		Data: map[string][]byte{v1alpha1.SecretKeyAgent: []byte("tenant secret")}})
	harness.Eventually(t, harness.Timeout, "the bridge's identity refused a tenant Secret", func() (bool, string) {
		err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.SecretName("old")}, &corev1.Secret{})
		return apierrors.IsForbidden(err), fmt.Sprintf("get: %v", err) // RBAC objects take effect within moments
	})

	// A sandbox as an earlier controller left it: running, with a pod IP,
	// no agentAuth (no controller runs in ns, so nothing rewrites it).
	old := makeSandbox(ns, "old")
	create(t, old)
	old.Status = v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxRunning, PodIPs: []string{"10.0.0.9"}, PodName: "old"}
	if err := env.Client.Status().Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	backend, err := kube.New(bctx, &cfg, kube.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatalf("the bridge under its own ClusterRole: %v", err)
	}
	harness.Eventually(t, harness.Timeout, "AGENT_LEGACY_POD for the earlier controller's sandbox", func() (bool, string) {
		_, err := backend.Agent(bctx, ns, "old")
		return errinfo.Reason(err) == errinfo.ReasonAgentLegacyPod && status.Code(err) == codes.FailedPrecondition, fmt.Sprintf("Agent: %v", err)
	})
}
