package lifecycle

import (
	"fmt"
	"net/netip"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// EffectiveEgress is a template's egress mode (default Internet).
func EffectiveEgress(np *v1alpha1.NetworkPolicySpec) v1alpha1.EgressMode {
	if np == nil || np.Egress == "" {
		return v1alpha1.EgressInternet
	}
	return np.Egress
}

// EgressAllow is one checked allowedEgress rule.
type EgressAllow struct {
	Prefix netip.Prefix
	Ports  []int32 // empty: every port
}

// CheckEgress checks a template's network policy section and returns its
// allowlist (nil unless the mode is Allowlist). The CRD refuses most of
// what this refuses already; this is the check for what its schema cannot
// say (a CIDR with host bits set, an IPv6 address that does not parse) and
// for the local engine, which reads templates from YAML without an API
// server. The error names the field.
func CheckEgress(np *v1alpha1.NetworkPolicySpec) ([]EgressAllow, error) {
	mode := EffectiveEgress(np)
	var rules []v1alpha1.EgressRule
	if np != nil {
		rules = np.AllowedEgress
	}
	switch mode {
	case v1alpha1.EgressInternet, v1alpha1.EgressNone:
		if len(rules) > 0 {
			return nil, fmt.Errorf("networkPolicy.allowedEgress goes with egress: Allowlist, not with egress: %s", mode)
		}
		return nil, nil
	case v1alpha1.EgressAllowlist:
	default:
		return nil, fmt.Errorf("networkPolicy.egress %q: want Internet, None or Allowlist", mode)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("networkPolicy.egress: Allowlist needs at least one networkPolicy.allowedEgress entry (use egress: None for no egress)")
	}
	if len(rules) > v1alpha1.MaxEgressRules {
		return nil, fmt.Errorf("networkPolicy.allowedEgress has %d entries, at most %d", len(rules), v1alpha1.MaxEgressRules)
	}
	out := make([]EgressAllow, 0, len(rules))
	for i, r := range rules {
		p, err := netip.ParsePrefix(r.CIDR)
		if err != nil {
			return nil, fmt.Errorf("networkPolicy.allowedEgress[%d].cidr %q is not a CIDR such as 10.20.0.0/16 or 2001:db8::/32", i, r.CIDR)
		}
		if p.Addr().Zone() != "" || p.Addr().Is4In6() {
			return nil, fmt.Errorf("networkPolicy.allowedEgress[%d].cidr %q: no zones or IPv4-mapped IPv6 addresses", i, r.CIDR)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("networkPolicy.allowedEgress[%d].cidr %q has host bits set: did you mean %s?", i, r.CIDR, p.Masked())
		}
		if len(r.Ports) > 16 {
			return nil, fmt.Errorf("networkPolicy.allowedEgress[%d].ports has %d ports, at most 16", i, len(r.Ports))
		}
		for _, port := range r.Ports {
			if port < 1 || port > 65535 {
				return nil, fmt.Errorf("networkPolicy.allowedEgress[%d].ports: %d is not a port (1 to 65535)", i, port)
			}
		}
		out = append(out, EgressAllow{Prefix: p, Ports: append([]int32(nil), r.Ports...)})
	}
	return out, nil
}
