package k8s_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	"github.com/sandpod/sandpod/core/preflight"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// roleFrom reads the rules of the Role or ClusterRole name in a file under
// deploy/.
func roleFrom(t *testing.T, file, name string) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var r rbacv1.ClusterRole
		if yaml.Unmarshal([]byte(doc), &r) == nil && r.Name == name && (r.Kind == "ClusterRole" || r.Kind == "Role") {
			return r.Rules
		}
	}
	t.Fatalf("no role %s in deploy/%s", name, file)
	return nil
}

// grant gives the service account sa of ns the rules, cluster-wide (or in
// ns only, with namespaced), under names unique to this test; it returns
// the binding.
func grant(t *testing.T, ns, sa string, rules []rbacv1.PolicyRule, namespaced bool) clientObject {
	t.Helper()
	name := "preflight-" + sa + "-" + rand.String(5)
	subj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
	var role, binding clientObject
	if namespaced {
		role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
		binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subjects: subj,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	} else {
		role = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subj,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	}
	create(t, role, binding)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, role)
	})
	return binding
}

func preflightRow(t *testing.T, rep preflight.Report, check string) preflight.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Check == check {
			return r
		}
	}
	t.Fatalf("no %q row in %+v", check, rep.Results)
	return preflight.Result{}
}

// eventuallyRow gathers and checks until the row check has status want
// (RBAC changes reach the authorizer through its informers).
func eventuallyRow(t *testing.T, o preflight.Options, check string, want preflight.Status) preflight.Result {
	t.Helper()
	var last preflight.Result
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, err := preflight.Gather(ctx, env.Config, o)
		if err != nil {
			t.Fatal(err)
		}
		last = preflightRow(t, preflight.Check(f), check)
		if last.Status == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if last.Status != want {
		t.Fatalf("%s: %s %q, want %s", check, last.Status, last.Detail, want)
	}
	return last
}

// TestPreflightRBACAndCRDs: with the controller's and the bridge's service
// accounts holding the roles deploy/ grants them, their RBAC rows pass;
// without the bridge's binding its row fails naming what it may not do;
// without the controller's service account, its row fails saying so.
func TestPreflightRBACAndCRDs(t *testing.T) {
	harness.Skip(t, env)
	ns := env.Namespace(t)
	for _, sa := range []string{"sandpod-controller", "sandpod-bridge"} {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	}
	grant(t, ns, "sandpod-controller", roleFrom(t, "rbac/role.yaml", "sandpod-controller"), false)
	grant(t, ns, "sandpod-controller", roleFrom(t, "base/rbac.yaml", "sandpod-leader-election"), true)
	grant(t, ns, "sandpod-controller", roleFrom(t, "base/rbac.yaml", "sandpod-agent-ca"), true)
	grant(t, ns, "sandpod-bridge", roleFrom(t, "base/bridge.yaml", "sandpod-bridge-agent-ca"), true)
	bridgeBinding := grant(t, ns, "sandpod-bridge", roleFrom(t, "base/bridge.yaml", "sandpod-bridge"), false)

	o := preflight.Options{SystemNamespace: ns, ControllerSA: "sandpod-controller", BridgeSA: "sandpod-bridge", ClusterDomain: "cluster.local", SkipProbes: true}
	for _, c := range []string{"RBAC of the controller", "RBAC of the bridge"} {
		eventuallyRow(t, o, c, preflight.Pass)
	}
	f, err := preflight.Gather(ctx, env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	rep := preflight.Check(f)
	for _, c := range []string{"API server", "CRDs"} {
		if r := preflightRow(t, rep, c); r.Status != preflight.Pass {
			t.Errorf("%s: %s %q, want pass", c, r.Status, r.Detail)
		}
	}
	// The bed's kube-apiserver runs without DenyServiceExternalIPs: the dry
	// run is accepted, said as a warning, and stores no Service.
	if r := preflightRow(t, rep, "Service externalIPs"); r.Status != preflight.Warn || !strings.Contains(r.Detail, "CVE-2020-8554") {
		t.Errorf("Service externalIPs: %s %q, want a warning naming CVE-2020-8554", r.Status, r.Detail)
	}
	svcs, err := env.Clientset.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		if strings.HasPrefix(s.Name, "sandpod-preflight-externalips-") {
			t.Errorf("the dry run stored Service %s", s.Name)
		}
	}

	if err := env.Client.Delete(ctx, bridgeBinding); err != nil {
		t.Fatal(err)
	}
	r := eventuallyRow(t, o, "RBAC of the bridge", preflight.Fail)
	if !strings.Contains(r.Detail, "may not") || !strings.Contains(r.Detail, "sandboxes.sandpod.dev") || r.Fix == "" {
		t.Errorf("bridge without its binding: %q (fix %q)", r.Detail, r.Fix)
	}
	if err := env.Clientset.CoreV1().ServiceAccounts(ns).Delete(ctx, "sandpod-controller", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = eventuallyRow(t, o, "RBAC of the controller", preflight.Fail)
	if !strings.Contains(r.Detail, "not found") {
		t.Errorf("controller without its service account: %q", r.Detail)
	}
	o.PreInstall = true
	eventuallyRow(t, o, "RBAC of the controller", preflight.Warn)
}

// TestPreflightRuntimeClassMissing runs the command: a template names a
// RuntimeClass the cluster lacks, so its row fails, naming the template,
// and the command exits 1. Once the RuntimeClass exists, the row no longer
// fails (kwok's node reports no runtime handlers: a warning that says the
// nodes' support is unknown).
func TestPreflightRuntimeClassMissing(t *testing.T) {
	harness.Skip(t, env)
	ns := env.Namespace(t)
	rc := "preflight-" + rand.String(6)
	tmpl := makeTemplate(ns, "isolated")
	tmpl.Spec.RuntimeClassName = &rc
	create(t, tmpl)

	bin := filepath.Join(t.TempDir(), "sandpod")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sandpod")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func() (preflight.Report, int) {
		cmd := exec.Command(bin, "preflight", "--kubeconfig", env.Kubeconfig, "--skip-probes", "-o", "json", "--system-namespace", ns)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var rep preflight.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("preflight -o json (exit %d): %v\n%s\n%s", code, err, out.String(), errb.String())
		}
		return rep, code
	}
	rep, code := run()
	r := preflightRow(t, rep, "RuntimeClass "+rc)
	if r.Status != preflight.Fail || !strings.Contains(r.Detail, "not found (named by "+ns+"/isolated)") || r.Fix == "" {
		t.Errorf("missing RuntimeClass: %s %q (fix %q)", r.Status, r.Detail, r.Fix)
	}
	if code != 1 {
		t.Errorf("exit code %d with a failing row, want 1", code)
	}

	create(t, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: rc}, Handler: "runsc"})
	t.Cleanup(func() { _ = env.Clientset.NodeV1().RuntimeClasses().Delete(ctx, rc, metav1.DeleteOptions{}) })
	rep, _ = run()
	if r := preflightRow(t, rep, "RuntimeClass "+rc); r.Status != preflight.Warn || !strings.Contains(r.Detail, "unknown") {
		t.Errorf("RuntimeClass present, nodes reporting no handlers: %s %q, want a warning", r.Status, r.Detail)
	}
}
