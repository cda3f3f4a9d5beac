package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceFQDN(t *testing.T) {
	sb := &Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb1", Namespace: "team-a"}}
	for domain, want := range map[string]string{
		"":              "sb1.team-a.svc.cluster.local",
		"cluster.local": "sb1.team-a.svc.cluster.local",
		"corp.example":  "sb1.team-a.svc.corp.example",
	} {
		if got := ServiceFQDN(sb, domain); got != want {
			t.Errorf("ServiceFQDN(%q) = %q, want %q", domain, got, want)
		}
	}
}

func TestParseClusterDomain(t *testing.T) {
	for in, want := range map[string]string{
		"":               "cluster.local",
		"cluster.local":  "cluster.local",
		"cluster.local.": "cluster.local",
		"Corp.Example":   "corp.example",
		" k8s.internal ": "k8s.internal",
		"local":          "local",
	} {
		got, err := ParseClusterDomain(in)
		if err != nil || got != want {
			t.Errorf("ParseClusterDomain(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{".", "cluster..local", "-x.local", "a_b.local", "cluster.local/x", " "} {
		if got, err := ParseClusterDomain(bad); err == nil {
			t.Errorf("ParseClusterDomain(%q) = %q, want an error", bad, got)
		}
	}
}
