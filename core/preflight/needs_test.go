package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rules reads the rules of the Roles and ClusterRoles named name in the
// YAML files under deploy/.
func rules(t *testing.T, name string, files ...string) []rbacv1.PolicyRule {
	t.Helper()
	var out []rbacv1.PolicyRule
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			var r rbacv1.ClusterRole // a Role has the same shape
			if err := yaml.Unmarshal([]byte(doc), &r); err != nil || (r.Kind != "ClusterRole" && r.Kind != "Role") || r.Name != name {
				continue
			}
			out = append(out, r.Rules...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no role %s in %v", name, files)
	}
	return out
}

func allows(rs []rbacv1.PolicyRule, n Need) bool {
	res := n.Resource
	if n.Subresource != "" {
		res += "/" + n.Subresource
	}
	for _, r := range rs {
		if (contains(r.APIGroups, n.Group) || contains(r.APIGroups, "*")) &&
			(contains(r.Resources, res) || contains(r.Resources, "*")) &&
			(contains(r.Verbs, n.Verb) || contains(r.Verbs, "*")) &&
			(len(r.ResourceNames) == 0 || (n.Name != "" && contains(r.ResourceNames, n.Name))) {
			return true
		}
	}
	return false
}

// What preflight asks for is what the manifests grant: a permission
// preflight checks and the manifests lack would fail every install, and
// one dropped from the manifests must be dropped here too.
func TestNeedsMatchTheManifests(t *testing.T) {
	clusterWide := rules(t, "sandpod-controller", "rbac/role.yaml")
	controller := append(append(clusterWide, rules(t, "sandpod-leader-election", "base/rbac.yaml")...), rules(t, "sandpod-agent-ca", "base/rbac.yaml")...)
	for _, n := range ControllerNeeds {
		if !allows(controller, n) {
			t.Errorf("controller: deploy/ does not grant %s", n)
		}
	}
	// No Secret rights in the sandboxes' namespaces: the controller's only
	// Secret is the agents' bridge CA, in its own namespace (a Role).
	for _, verb := range []string{"get", "create", "delete", "list", "watch"} {
		if allows(clusterWide, Need{Verb: verb, Resource: "secrets"}) {
			t.Errorf("the controller's ClusterRole grants %s secrets", verb)
		}
	}
	bridge := append(rules(t, "sandpod-bridge", "base/bridge.yaml"), rules(t, "sandpod-bridge-agent-ca", "base/bridge.yaml")...)
	for _, n := range BridgeNeeds {
		if !allows(bridge, n) {
			t.Errorf("bridge: deploy/ does not grant %s", n)
		}
	}
}

// Every CRD deploy/ installs is one preflight checks: the bridge does not
// start without any of them, so a check that passed with one missing would
// pass a cluster where sandpod cannot run.
func TestWantCRDsAreDeployed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "crd", "sandpod.dev_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in deploy/crd: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "sandpod.dev_"), ".yaml") + ".sandpod.dev"
		if !contains(WantCRDs, name) {
			t.Errorf("deploy/crd has %s; preflight's WantCRDs does not check it", name)
		}
	}
	if len(WantCRDs) != len(files) {
		t.Errorf("WantCRDs has %d names, deploy/crd %d CRDs", len(WantCRDs), len(files))
	}
}
