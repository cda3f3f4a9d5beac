package template

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestBuildNetworkPolicy(t *testing.T) {
	f := false
	cases := map[string]struct {
		np          *v1alpha1.NetworkPolicySpec
		wantManaged bool
		wantEgress  int
	}{
		"default: internet minus internal": {wantManaged: true, wantEgress: 2},
		"egress none":                      {np: &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone}, wantManaged: true, wantEgress: 0},
		"unmanaged":                        {np: &v1alpha1.NetworkPolicySpec{Managed: &f}, wantManaged: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "py", Namespace: "ns", UID: "u"}}
			tmpl.Spec.NetworkPolicy = tc.np
			if got := ManagesNetworkPolicy(tmpl); got != tc.wantManaged {
				t.Fatalf("managed = %v, want %v", got, tc.wantManaged)
			}
			if !tc.wantManaged {
				return
			}
			np := BuildNetworkPolicy(tmpl, nil)
			if np.Name != "sandpod-py" || np.Spec.PodSelector.MatchLabels[v1alpha1.LabelTemplate] != "py" {
				t.Errorf("name/selector = %s %v", np.Name, np.Spec.PodSelector)
			}
			if len(np.Spec.PolicyTypes) != 2 {
				t.Errorf("policy types = %v", np.Spec.PolicyTypes)
			}
			if len(np.Spec.Egress) != tc.wantEgress {
				t.Errorf("egress rules = %d, want %d", len(np.Spec.Egress), tc.wantEgress)
			}
			in := np.Spec.Ingress
			if len(in) != 1 || in[0].From[0].PodSelector.MatchLabels[v1alpha1.LabelComponent] != v1alpha1.ComponentBridge || in[0].Ports[0].Port.IntValue() != v1alpha1.AgentPort {
				t.Errorf("ingress = %+v", in)
			}
			if tc.wantEgress == 2 {
				v4 := np.Spec.Egress[1].To[0].IPBlock
				blocked := map[string]bool{}
				for _, e := range v4.Except {
					blocked[e] = true
				}
				for _, cidr := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} {
					if !blocked[cidr] {
						t.Errorf("%s not blocked", cidr)
					}
				}
			}
		})
	}
}

// rendered is an egress rule in short: "dns", or the CIDR, its excepts
// and ports, e.g. "10.0.0.0/8 -10.1.0.0/16 :443/TCP :443/UDP".
func rendered(r networkingv1.NetworkPolicyEgressRule) string {
	var parts []string
	for _, to := range r.To {
		switch {
		case to.IPBlock != nil:
			parts = append(parts, to.IPBlock.CIDR)
			for _, e := range to.IPBlock.Except {
				parts = append(parts, "-"+e)
			}
		case to.NamespaceSelector != nil && to.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "kube-system":
			parts = append(parts, "dns")
		default:
			parts = append(parts, "?")
		}
	}
	for _, p := range r.Ports {
		if p.Port.IntValue() != 53 {
			parts = append(parts, fmt.Sprintf(":%d/%s", p.Port.IntValue(), *p.Protocol))
		}
	}
	return strings.Join(parts, " ")
}

func TestParseDNSRanges(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "[]",
		"169.254.20.10":               "[169.254.20.10/32]",
		" 10.96.0.10 , fd00::a":       "[10.96.0.10/32 fd00::a/128]",
		"192.0.2.77/24":               "[192.0.2.0/24]",
		"169.254.20.10,,192.0.2.1/32": "[169.254.20.10/32 192.0.2.1/32]",
		"fd00::100/120":               "[fd00::100/120]",
	} {
		got, err := ParseDNSRanges(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	// Wider than 256 addresses: port 53 of every pod in them to every sandbox.
	for _, bad := range []string{"kube-dns", "10.0.0.0/33", "1.2.3.4:53", "0.0.0.0/0", "10.244.0.0/16", "10.96.0.0/23", "::/0", "fd00::/64", "fd00::/119"} {
		if _, err := ParseDNSRanges(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBuildNetworkPolicyEgress(t *testing.T) {
	v4Internet := "0.0.0.0/0 -" + strings.Join(BlockedEgressV4, " -")
	v6Internet := "::/0 -" + strings.Join(BlockedEgressV6, " -")
	allow := func(rules ...v1alpha1.EgressRule) *v1alpha1.NetworkPolicySpec {
		return &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: rules}
	}
	cases := map[string]struct {
		np        *v1alpha1.NetworkPolicySpec
		apiServer []string
		dns       string   // --dns-egress
		want      []string // rendered egress rules
	}{
		"internet": {want: []string{"dns", v4Internet + " " + v6Internet}},
		"internet, API server on a public address": {
			apiServer: []string{"192.0.2.2", "2001:db8::1"},
			want:      []string{"dns", v4Internet + " -192.0.2.2/32 " + v6Internet + " -2001:db8::1/128"},
		},
		"internet, API server in a blocked range": {apiServer: []string{"10.1.2.3"}, want: []string{"dns", v4Internet + " " + v6Internet}},
		"none": {np: &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone}, apiServer: []string{"192.0.2.2"}, want: nil},
		"allowlist: a host on a port, a network on every port": {
			np:   allow(v1alpha1.EgressRule{CIDR: "10.244.0.7/32", Ports: []int32{8080}}, v1alpha1.EgressRule{CIDR: "2001:db8::/32"}),
			want: []string{"dns", "10.244.0.7/32 :8080/TCP :8080/UDP", "2001:db8::/32"},
		},
		"allowlist: the API server and metadata are carved out": {
			np:        allow(v1alpha1.EgressRule{CIDR: "0.0.0.0/0", Ports: []int32{443, 6443}}, v1alpha1.EgressRule{CIDR: "192.0.2.0/24"}),
			apiServer: []string{"192.0.2.2"},
			want: []string{"dns",
				"0.0.0.0/0 -169.254.0.0/16 -192.0.2.2/32 :443/TCP :443/UDP :6443/TCP :6443/UDP",
				"192.0.2.0/24 -192.0.2.2/32"},
		},
		"allowlist: entries inside a blocked range allow nothing": {
			np:        allow(v1alpha1.EgressRule{CIDR: "169.254.169.254/32"}, v1alpha1.EgressRule{CIDR: "192.0.2.2/32"}, v1alpha1.EgressRule{CIDR: "10.0.0.0/8"}),
			apiServer: []string{"192.0.2.2"},
			want:      []string{"dns", "10.0.0.0/8"},
		},
		"allowlist: v6 metadata carved out": {
			np:   allow(v1alpha1.EgressRule{CIDR: "fd00::/8"}),
			want: []string{"dns", "fd00::/8 -fd00:ec2::254/128"},
		},
		"internet, NodeLocal DNSCache and an outside resolver (port 53 only)": {
			dns:  "169.254.20.10, 192.0.2.53/32",
			want: []string{"dns 169.254.20.10/32 192.0.2.53/32", v4Internet + " " + v6Internet},
		},
		"allowlist keeps the extra DNS": {
			np: allow(v1alpha1.EgressRule{CIDR: "192.0.2.0/24"}), dns: "169.254.20.10",
			want: []string{"dns 169.254.20.10/32", "192.0.2.0/24"},
		},
		"egress None: no DNS either":             {np: &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone}, dns: "169.254.20.10", want: nil},
		"invalid allowlist: fail closed":         {np: allow(v1alpha1.EgressRule{CIDR: "10.0.0.1/8"}), dns: "169.254.20.10", want: nil},
		"allowlist without entries: fail closed": {np: allow(), want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "py", Namespace: "ns", UID: "u"}}
			tmpl.Spec.NetworkPolicy = tc.np
			var api []netip.Addr
			for _, a := range tc.apiServer {
				api = append(api, netip.MustParseAddr(a))
			}
			dns, err := ParseDNSRanges(tc.dns)
			if err != nil {
				t.Fatal(err)
			}
			np := BuildNetworkPolicy(tmpl, dns, api...)
			var got []string
			for _, r := range np.Spec.Egress {
				got = append(got, rendered(r))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("egress =\n  %q\nwant\n  %q", got, tc.want)
			}
			if len(np.Spec.PolicyTypes) != 2 {
				t.Errorf("policy types = %v: without Egress listed, no egress rule would mean every egress", np.Spec.PolicyTypes)
			}
		})
	}
}
