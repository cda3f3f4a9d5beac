package lifecycle

import (
	"strings"
	"testing"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestCheckEgress(t *testing.T) {
	allow := func(rules ...v1alpha1.EgressRule) *v1alpha1.NetworkPolicySpec {
		return &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: rules}
	}
	many := make([]v1alpha1.EgressRule, v1alpha1.MaxEgressRules+1)
	for i := range many {
		many[i] = v1alpha1.EgressRule{CIDR: "10.0.0.0/8"}
	}
	cases := map[string]struct {
		np        *v1alpha1.NetworkPolicySpec
		wantRules []string // the prefixes, in order
		wantErr   string   // a piece of the error
	}{
		"unset: internet":   {},
		"internet":          {np: &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressInternet}},
		"none":              {np: &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone}},
		"unknown mode":      {np: &v1alpha1.NetworkPolicySpec{Egress: "Everything"}, wantErr: `"Everything": want Internet, None or Allowlist`},
		"rules with none":   {np: &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/8"}}}, wantErr: "not with egress: None"},
		"rules, no mode":    {np: &v1alpha1.NetworkPolicySpec{AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/8"}}}, wantErr: "not with egress: Internet"},
		"allowlist empty":   {np: allow(), wantErr: "at least one"},
		"allowlist v4 + v6": {np: allow(v1alpha1.EgressRule{CIDR: "10.20.0.0/16", Ports: []int32{443}}, v1alpha1.EgressRule{CIDR: "2001:db8::/32"}), wantRules: []string{"10.20.0.0/16", "2001:db8::/32"}},
		"a host":            {np: allow(v1alpha1.EgressRule{CIDR: "203.0.113.7/32"}), wantRules: []string{"203.0.113.7/32"}},
		"everything v4":     {np: allow(v1alpha1.EgressRule{CIDR: "0.0.0.0/0"}), wantRules: []string{"0.0.0.0/0"}},
		"host bits":         {np: allow(v1alpha1.EgressRule{CIDR: "10.20.0.1/16"}), wantErr: "host bits set: did you mean 10.20.0.0/16?"},
		"no length":         {np: allow(v1alpha1.EgressRule{CIDR: "10.20.0.1"}), wantErr: "allowedEgress[0].cidr \"10.20.0.1\" is not a CIDR"},
		"bad v6":            {np: allow(v1alpha1.EgressRule{CIDR: "2001:::1/64"}), wantErr: "is not a CIDR"},
		"v4 length 33":      {np: allow(v1alpha1.EgressRule{CIDR: "10.0.0.0/33"}), wantErr: "is not a CIDR"},
		"mapped v4":         {np: allow(v1alpha1.EgressRule{CIDR: "::ffff:10.0.0.0/104"}), wantErr: "IPv4-mapped"},
		"second rule bad":   {np: allow(v1alpha1.EgressRule{CIDR: "10.0.0.0/8"}, v1alpha1.EgressRule{CIDR: "x"}), wantErr: "allowedEgress[1].cidr"},
		"port 0":            {np: allow(v1alpha1.EgressRule{CIDR: "10.0.0.0/8", Ports: []int32{0}}), wantErr: "0 is not a port"},
		"port 65536":        {np: allow(v1alpha1.EgressRule{CIDR: "10.0.0.0/8", Ports: []int32{65536}}), wantErr: "65536 is not a port"},
		"too many rules":    {np: allow(many...), wantErr: "at most 32"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := CheckEgress(tc.np)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.wantRules) {
				t.Fatalf("rules = %v, want %v", got, tc.wantRules)
			}
			for i, r := range got {
				if r.Prefix.String() != tc.wantRules[i] {
					t.Errorf("rule %d = %s, want %s", i, r.Prefix, tc.wantRules[i])
				}
			}
		})
	}
}
