package template

import (
	"testing"

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
			np := BuildNetworkPolicy(tmpl)
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
