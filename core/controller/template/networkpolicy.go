package template

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
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

// BuildNetworkPolicy is the managed NetworkPolicy of a template's sandboxes:
// ingress only from sandpod bridge pods (any namespace) to the agent port;
// egress to DNS and the internet but not to cluster-internal ranges or the
// cloud metadata address, or no egress at all.
func BuildNetworkPolicy(t *v1alpha1.SandboxTemplate) *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	agentPort := intstr.FromInt32(v1alpha1.AgentPort)
	dnsPort := intstr.FromInt32(53)
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
	egress := v1alpha1.EgressInternet
	if t.Spec.NetworkPolicy != nil && t.Spec.NetworkPolicy.Egress != "" {
		egress = t.Spec.NetworkPolicy.Egress
	}
	if egress == v1alpha1.EgressNone {
		return np // Egress listed with no rule: nothing goes out.
	}
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
		{ // cluster DNS, wherever it runs
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dnsPort}, {Protocol: &tcp, Port: &dnsPort}},
		},
		{
			To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: BlockedEgressV4}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: BlockedEgressV6}},
			},
		},
	}
	return np
}
