package k8s_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/core/controller/template"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// poolMembers are the unclaimed sandboxes of a pool, read live.
func poolMembers(t *testing.T, ns, pool string) []v1alpha1.Sandbox {
	t.Helper()
	var list v1alpha1.SandboxList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPool: pool}); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.Sandbox
	for _, sb := range list.Items {
		if sb.DeletionTimestamp == nil {
			out = append(out, sb)
		}
	}
	return out
}

// waitPoolReady waits until the pool has exactly n members, all ready and of
// the given template hash (any hash when empty).
func waitPoolReady(t *testing.T, ns, pool string, n int, hash string) []v1alpha1.Sandbox {
	t.Helper()
	var ms []v1alpha1.Sandbox
	harness.Eventually(t, harness.Timeout, fmt.Sprintf("pool %s at %d ready members", pool, n), func() (bool, string) {
		ms = poolMembers(t, ns, pool)
		ready := 0
		for _, m := range ms {
			if m.Status.Phase == v1alpha1.SandboxRunning && (hash == "" || m.Labels[v1alpha1.LabelTemplateHash] == hash) {
				ready++
			}
		}
		p := &v1alpha1.SandboxWarmPool{}
		_ = env.Get(p, ns, pool)
		return len(ms) == n && ready == n && p.Status.ReadyReplicas == int32(n),
			fmt.Sprintf("members=%d ready=%d status=%+v", len(ms), ready, p.Status)
	})
	return ms
}

func TestWarmPoolKeepsNReady(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 3))
	ms := waitPoolReady(t, ns, "pool", 3, "")
	for _, m := range ms {
		if err := env.Get(&corev1.Pod{}, ns, m.Name); err != nil {
			t.Errorf("member %s has no pod: %v", m.Name, err)
		}
	}
	// A member that disappears is replaced.
	if err := env.Client.Delete(ctx, &ms[0]); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, harness.Timeout, "replacement", func() (bool, string) {
		now := poolMembers(t, ns, "pool")
		for _, m := range now {
			if m.Name == ms[0].Name {
				return false, "old member still there"
			}
		}
		return len(now) == 3, fmt.Sprintf("%d members", len(now))
	})
	waitPoolReady(t, ns, "pool", 3, "")
}

func TestWarmPoolScaleSubresource(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 1))
	waitPoolReady(t, ns, "pool", 1, "")

	pool := &v1alpha1.SandboxWarmPool{}
	if err := env.Get(pool, ns, "pool"); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, pool, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Status.Selector != v1alpha1.LabelPool+"=pool" {
		t.Errorf("scale selector = %q", scale.Status.Selector)
	}
	scale.Spec.Replicas = 4
	if err := env.Client.SubResource("scale").Update(ctx, pool, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	waitPoolReady(t, ns, "pool", 4, "")

	if err := env.Get(pool, ns, "pool"); err != nil {
		t.Fatal(err)
	}
	scale = &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, pool, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 2
	if err := env.Client.SubResource("scale").Update(ctx, pool, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scale down: %v", err)
	}
	waitPoolReady(t, ns, "pool", 2, "")
}

func TestWarmPoolRollsOnTemplateChange(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	tmpl := makeTemplate(ns, "py")
	create(t, tmpl, makePool(ns, "pool", "py", 2))
	old := waitPoolReady(t, ns, "pool", 2, "")

	if err := env.Get(tmpl, ns, "py"); err != nil {
		t.Fatal(err)
	}
	tmpl.Spec.PodTemplate.Spec.Containers[0].Image = "python:3.14-slim"
	if err := env.Client.Update(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	hash := lifecycle.TemplateHash(tmpl.Spec)
	rolled := waitPoolReady(t, ns, "pool", 2, hash)
	for _, m := range rolled {
		for _, o := range old {
			if m.Name == o.Name {
				t.Errorf("member %s survived the roll", m.Name)
			}
		}
		if img := m.Spec.PodTemplate.Spec.Containers[0].Image; img != "python:3.14-slim" {
			t.Errorf("member %s has image %s", m.Name, img)
		}
	}
}

func TestTemplateManagedNetworkPolicy(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	open := makeTemplate(ns, "open")
	closed := makeTemplate(ns, "closed")
	closed.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone}
	create(t, open, closed)

	np := &networkingv1.NetworkPolicy{}
	harness.Eventually(t, harness.Timeout, "network policy", func() (bool, string) {
		err := env.Get(np, ns, template.NetworkPolicyName("open"))
		return err == nil, fmt.Sprint(err)
	})
	if np.Spec.PodSelector.MatchLabels[v1alpha1.LabelTemplate] != "open" {
		t.Errorf("selector = %v", np.Spec.PodSelector)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 ||
		np.Spec.Ingress[0].From[0].PodSelector.MatchLabels[v1alpha1.LabelComponent] != v1alpha1.ComponentBridge {
		t.Errorf("ingress is not bridge-only: %+v", np.Spec.Ingress)
	}
	var blocksMetadata bool
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if p.IPBlock != nil && p.IPBlock.CIDR == "0.0.0.0/0" {
				for _, ex := range p.IPBlock.Except {
					if ex == "169.254.0.0/16" {
						blocksMetadata = true
					}
				}
				if len(p.IPBlock.Except) == 0 {
					t.Errorf("internet egress with no exceptions")
				}
			}
		}
	}
	if !blocksMetadata {
		t.Errorf("egress does not block the metadata address: %+v", np.Spec.Egress)
	}

	cnp := &networkingv1.NetworkPolicy{}
	harness.Eventually(t, harness.Timeout, "closed network policy", func() (bool, string) {
		err := env.Get(cnp, ns, template.NetworkPolicyName("closed"))
		return err == nil, fmt.Sprint(err)
	})
	if len(cnp.Spec.Egress) != 0 || len(cnp.Spec.PolicyTypes) != 2 {
		t.Errorf("egress None should deny all egress: %+v", cnp.Spec)
	}
	// The template reports its spec hash, which pools roll on.
	tmpl := &v1alpha1.SandboxTemplate{}
	harness.Eventually(t, harness.Timeout, "template status", func() (bool, string) {
		_ = env.Get(tmpl, ns, "open")
		return tmpl.Status.SpecHash == lifecycle.TemplateHash(tmpl.Spec), fmt.Sprintf("%+v", tmpl.Status)
	})
}

// TestTemplateEgressAllowlist: egress: Allowlist renders DNS and one rule
// per entry on its ports, with the API server's address (read from the
// bed's own EndpointSlice default/kubernetes) carved out of an entry that
// holds it; an entry the schema lets through but the controller does not
// (host bits set) gives a policy with no egress and a Ready=False template
// that says how to fix it.
func TestTemplateEgressAllowlist(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	// The kwok bed's API server keeps no endpoints of its own (loopback
	// cannot be advertised): stand in for it with a public-looking address,
	// as the node bed's is.
	api := netip.MustParseAddr("192.0.2.10")
	apiNet := netip.MustParsePrefix("192.0.2.0/24")
	port, proto := int32(6443), corev1.ProtocolTCP
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{"kubernetes.io/service-name": "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{api.String()}}},
		Ports:       []discoveryv1.EndpointPort{{Port: &port, Protocol: &proto}},
	}
	if err := env.Client.Create(ctx, es); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, es) })

	allow := makeTemplate(ns, "allow")
	allow.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{
		{CIDR: "203.0.113.0/24", Ports: []int32{443}},
		{CIDR: apiNet.String()},
	}}
	bad := makeTemplate(ns, "hostbits")
	bad.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.20.0.1/16"}}}
	create(t, allow, bad)

	np := &networkingv1.NetworkPolicy{}
	harness.Eventually(t, harness.Timeout, "allowlist network policy", func() (bool, string) {
		err := env.Get(np, ns, template.NetworkPolicyName("allow"))
		return err == nil, fmt.Sprint(err)
	})
	if len(np.Spec.Egress) != 3 {
		t.Fatalf("egress = %+v, want DNS and two rules", np.Spec.Egress)
	}
	first, second := np.Spec.Egress[1], np.Spec.Egress[2]
	if first.To[0].IPBlock == nil || first.To[0].IPBlock.CIDR != "203.0.113.0/24" || len(first.Ports) != 2 || first.Ports[0].Port.IntValue() != 443 {
		t.Errorf("first rule = %+v", first)
	}
	wantExcept := []string{"192.0.2.10/32"}
	if second.To[0].IPBlock == nil || second.To[0].IPBlock.CIDR != apiNet.String() ||
		fmt.Sprint(second.To[0].IPBlock.Except) != fmt.Sprint(wantExcept) || len(second.Ports) != 0 {
		t.Errorf("second rule = %+v, want %s except %v on every port", second, apiNet, wantExcept)
	}

	tmpl := &v1alpha1.SandboxTemplate{}
	harness.Eventually(t, harness.Timeout, "template hostbits reported invalid", func() (bool, string) {
		_ = env.Get(tmpl, ns, "hostbits")
		c := meta.FindStatusCondition(tmpl.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonInvalidSpec &&
			strings.Contains(c.Message, "did you mean 10.20.0.0/16?"), fmt.Sprintf("%+v", c)
	})
	bnp := &networkingv1.NetworkPolicy{}
	if err := env.Get(bnp, ns, template.NetworkPolicyName("hostbits")); err != nil {
		t.Fatal(err)
	}
	if len(bnp.Spec.Egress) != 0 || len(bnp.Spec.PolicyTypes) != 2 {
		t.Errorf("an invalid allowlist should fail closed: %+v", bnp.Spec)
	}
}

// Pool members carry no managedFields (adopt.Untrack), so kube-apiserver
// tracks none of their writes, and the sandboxes claims take from them
// stay so: the take, any write after it.
func TestPoolMembersAreUntracked(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 2))
	for _, m := range waitPoolReady(t, ns, "pool", 2, "") {
		if len(m.ManagedFields) != 0 {
			t.Errorf("member %s has managedFields %+v", m.Name, m.ManagedFields)
		}
	}
	sb := claimWarm(t, ns, "c", "py")
	if len(sb.ManagedFields) != 0 {
		t.Errorf("claimed sandbox %s has managedFields %+v", sb.Name, sb.ManagedFields)
	}
	// A later write of someone else is not tracked either.
	if err := env.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))); err != nil {
		t.Fatal(err)
	}
	if len(sb.ManagedFields) != 0 {
		t.Errorf("after a patch, sandbox %s has managedFields %+v", sb.Name, sb.ManagedFields)
	}
}

// claimWarm creates SandboxClaim name of template and returns the pool
// member it took, as the API server has it once the take is in.
func claimWarm(t *testing.T, ns, name, template string) *v1alpha1.Sandbox {
	t.Helper()
	create(t, makeClaim(ns, name, template))
	var sandbox string
	harness.Eventually(t, harness.Timeout, "claim bound", func() (bool, string) {
		c := &v1alpha1.SandboxClaim{}
		if err := env.Get(c, ns, name); err != nil {
			return false, err.Error()
		}
		sandbox = c.Status.SandboxName
		return sandbox != "", fmt.Sprintf("%+v", c.Status)
	})
	return waitSandbox(t, ns, sandbox, "taken", func(sb *v1alpha1.Sandbox) bool { return sb.Labels[v1alpha1.LabelPool] == "" })
}

// With --untrack-pool-members=false a member keeps the managedFields its
// create made (one write fewer per member), and the take clears them in its
// own write (adopt.TakeWrite), so the claimed sandbox is untracked all the
// same.
func TestPoolMembersKeepManagedFieldsWhenAsked(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: controller.Options{KeepManagedFields: true}})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 1))
	for _, m := range waitPoolReady(t, ns, "pool", 1, "") {
		if len(m.ManagedFields) == 0 {
			t.Errorf("member %s has no managedFields", m.Name)
		}
	}
	sb := claimWarm(t, ns, "c", "py")
	if len(sb.ManagedFields) != 0 {
		t.Errorf("claimed sandbox %s has managedFields %+v", sb.Name, sb.ManagedFields)
	}
}
