package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// A sandbox with a service is answered with its DNS name before the
// controller writes it (in the bridge's --cluster-domain); the controller's
// name wins once written.
func TestSandboxToProtoServiceFQDN(t *testing.T) {
	t.Cleanup(func() { setClusterDomain("") })
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns"}}
	if got := sandboxToProto(sb).GetServiceFqdn(); got != "" {
		t.Errorf("no service: %q, want none", got)
	}
	sb.Spec.Service = true
	if got := sandboxToProto(sb).GetServiceFqdn(); got != "sb.ns.svc.cluster.local" {
		t.Errorf("default domain: %q", got)
	}
	setClusterDomain("corp.example")
	if got := sandboxToProto(sb).GetServiceFqdn(); got != "sb.ns.svc.corp.example" {
		t.Errorf("--cluster-domain corp.example: %q", got)
	}
	sb.Status.ServiceFQDN = "sb.ns.svc.other.example"
	if got := sandboxToProto(sb).GetServiceFqdn(); got != sb.Status.ServiceFQDN {
		t.Errorf("with the controller's name: %q, want %q", got, sb.Status.ServiceFQDN)
	}
}
