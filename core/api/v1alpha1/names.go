package v1alpha1

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Names of the objects that belong to a sandbox, shared by the controller
// that makes them and the bridge that reads them.

// SecretName is the name of a sandbox's agent Secret.
func SecretName(sandbox string) string { return sandbox + "-agent" }

// DefaultClusterDomain is the DNS domain of a cluster unless its kubelets
// say otherwise (their clusterDomain; the --cluster-domain flag of the
// controller, the bridge and `sandpod preflight`).
const DefaultClusterDomain = "cluster.local"

// ServiceFQDN is the stable DNS name of a sandbox with a service in a
// cluster whose DNS domain is clusterDomain (DefaultClusterDomain when
// empty): its headless Service's name.
func ServiceFQDN(sb *Sandbox, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = DefaultClusterDomain
	}
	return fmt.Sprintf("%s.%s.svc.%s", sb.Name, sb.Namespace, clusterDomain)
}

// ParseClusterDomain checks a --cluster-domain value: a DNS subdomain such
// as cluster.local, written with or without its final dot; it returns it
// without the dot, lower case. Empty means DefaultClusterDomain.
func ParseClusterDomain(s string) (string, error) {
	d := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
	if s == "" {
		return DefaultClusterDomain, nil
	}
	if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
		return "", fmt.Errorf("cluster domain %q: %s (e.g. %s, the kubelets' clusterDomain)", s, strings.Join(errs, "; "), DefaultClusterDomain)
	}
	return d, nil
}
