package template

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// BlockedEgressV4 and BlockedEgressV6 are the ranges a sandbox with Internet
// egress may not reach: private and shared (cluster-internal) ranges,
// link-local (which holds the cloud metadata address 169.254.169.254) and
// loopback.
var (
	BlockedEgressV4 = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "127.0.0.0/8"}
	BlockedEgressV6 = []string{"fc00::/7", "fe80::/10", "::1/128", "fd00:ec2::254/128"}
)

// NetworkPolicyName is the name of a template's managed NetworkPolicy.
func NetworkPolicyName(template string) string { return "sandpod-" + template }

// ManagesNetworkPolicy says whether a template asks for the managed policy
// (the default).
func ManagesNetworkPolicy(t *v1alpha1.SandboxTemplate) bool {
	np := t.Spec.NetworkPolicy
	return np == nil || np.Managed == nil || *np.Managed
}

// AlwaysBlockedV4 and AlwaysBlockedV6 are carved out of every allowlist
// rule as well: the cloud metadata address (link-local) is never a
// destination a template can allow.
var (
	AlwaysBlockedV4 = []string{"169.254.0.0/16"}
	AlwaysBlockedV6 = []string{"fe80::/10", "fd00:ec2::254/128"}
)

// BuildNetworkPolicy is the managed NetworkPolicy of a template's sandboxes:
// ingress only from sandpod bridge pods (any namespace) to the agent port;
// egress to DNS and the internet but not to cluster-internal ranges, the
// cloud metadata address or the API server (apiServer: its endpoint
// addresses, which need not be in a private range); or no egress at all;
// or DNS and the template's allowlist, minus the metadata address and the
// API server. A template whose network policy section does not check
// (lifecycle.CheckEgress) gets no egress: the reconciler reports why.
// DNS means pods in kube-system on port 53, plus the extraDNS ranges on
// port 53 (a NodeLocal DNSCache address, a resolver outside the cluster).
func BuildNetworkPolicy(t *v1alpha1.SandboxTemplate, extraDNS []netip.Prefix, apiServer ...netip.Addr) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	agentPort := intstr.FromInt32(v1alpha1.AgentPort)
	truth := true

	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: NetworkPolicyName(t.Name), Namespace: t.Namespace,
			Labels: map[string]string{v1alpha1.LabelTemplate: t.Name, v1alpha1.LabelAppName: v1alpha1.AppName},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxTemplate",
				Name: t.Name, UID: t.UID, Controller: &truth, BlockOwnerDeletion: &truth,
			}},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelTemplate: t.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{},
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
						v1alpha1.LabelAppName: v1alpha1.AppName, v1alpha1.LabelComponent: v1alpha1.ComponentBridge,
					}},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &agentPort}},
			}},
		},
	}
	allow, err := lifecycle.CheckEgress(t.Spec.NetworkPolicy)
	if err != nil {
		return np // fail closed: Egress listed with no rule
	}
	switch lifecycle.EffectiveEgress(t.Spec.NetworkPolicy) {
	case v1alpha1.EgressNone:
		return np // Egress listed with no rule: nothing goes out.
	case v1alpha1.EgressAllowlist:
		np.Spec.Egress = append([]networkingv1.NetworkPolicyEgressRule{dnsRule(extraDNS)}, allowlistRules(allow, apiServer)...)
		return np
	}
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
		dnsRule(extraDNS),
		{
			To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: withHosts(BlockedEgressV4, apiServer, true)}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: withHosts(BlockedEgressV6, apiServer, false)}},
			},
		},
	}
	return np
}

// dnsRule allows cluster DNS, wherever it runs in kube-system, and the
// extra DNS ranges, on port 53 only.
func dnsRule(extra []netip.Prefix) networkingv1.NetworkPolicyEgressRule {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	dnsPort := intstr.FromInt32(53)
	to := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
	}}
	for _, p := range extra {
		to = append(to, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.Masked().String()}})
	}
	return networkingv1.NetworkPolicyEgressRule{
		To:    to,
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dnsPort}, {Protocol: &tcp, Port: &dnsPort}},
	}
}

// maxDNSRangeBits is how many host bits a --dns-egress range may have (256
// addresses): it names DNS servers, and a wider one (a pod or service
// range, 0.0.0.0/0) would open port 53 of every pod in it, other
// sandboxes' included, to every sandbox, under Internet and Allowlist.
const maxDNSRangeBits = 8

// ParseDNSRanges reads --dns-egress: comma-separated addresses or CIDRs
// ("169.254.20.10" is 169.254.20.10/32) of at most 256 addresses each.
func ParseDNSRanges(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR", f)
		}
		if p.Addr().BitLen()-p.Bits() > maxDNSRangeBits {
			return nil, fmt.Errorf("%q is wider than 256 addresses: name the DNS servers (a range holding pods would open their port 53 to every sandbox)", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// withHosts is blocked plus each address of hosts of the family (v4 or
// not) that blocked does not cover already, as a one-address CIDR.
func withHosts(blocked []string, hosts []netip.Addr, v4 bool) []string {
	out := append([]string(nil), blocked...)
	for _, h := range hosts {
		if h.Is4() != v4 || covered(blocked, h) {
			continue
		}
		out = append(out, netip.PrefixFrom(h, h.BitLen()).String())
	}
	return out
}

func covered(cidrs []string, a netip.Addr) bool {
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// allowlistRules is one egress rule per allowlist entry: its CIDR minus
// the always-blocked ranges and API server addresses inside it (a
// NetworkPolicy's except must lie strictly inside its CIDR), on its ports
// (TCP and UDP), or on every port. An entry that lies wholly inside a
// blocked range allows nothing and is left out.
func allowlistRules(allow []lifecycle.EgressAllow, apiServer []netip.Addr) []networkingv1.NetworkPolicyEgressRule {
	var blocked []netip.Prefix
	for _, c := range append(append([]string(nil), AlwaysBlockedV4...), AlwaysBlockedV6...) {
		blocked = append(blocked, netip.MustParsePrefix(c))
	}
	for _, a := range apiServer {
		blocked = append(blocked, netip.PrefixFrom(a, a.BitLen()))
	}
	var out []networkingv1.NetworkPolicyEgressRule
	for _, r := range allow {
		block := &networkingv1.IPBlock{CIDR: r.Prefix.String()}
		inside := false
		for _, b := range blocked {
			switch {
			case b.Addr().Is4() != r.Prefix.Addr().Is4():
			case b.Bits() <= r.Prefix.Bits() && b.Contains(r.Prefix.Addr()):
				inside = true
			case b.Bits() > r.Prefix.Bits() && r.Prefix.Contains(b.Addr()):
				block.Except = append(block.Except, b.String())
			}
		}
		if inside {
			continue
		}
		rule := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: block}}}
		for _, p := range r.Ports {
			port := intstr.FromInt32(p)
			tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port},
				networkingv1.NetworkPolicyPort{Protocol: &udp, Port: &port})
		}
		out = append(out, rule)
	}
	return out
}
