package k8s_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sandpod/sandpod/bridge/kube"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Two bridge backends in one process each answer in their own
// --cluster-domain: a sandbox with a service that no controller has named yet
// (none runs here) is answered with the name it will have in each one's
// cluster, not in the domain of whichever backend was made last.
func TestBridgeBackendsKeepTheirOwnClusterDomain(t *testing.T) {
	harness.Skip(t, env)
	ns := env.Namespace(t)
	sb := makeSandbox(ns, "named")
	sb.Spec.Service = true
	create(t, sb)

	bctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	domains := []string{"one.example", "two.example"}
	backends := make([]*kube.Backend, len(domains))
	for i, d := range domains {
		b, err := kube.New(bctx, env.Config, kube.Options{Namespaces: []string{ns}, ClusterDomain: d})
		if err != nil {
			t.Fatal(err)
		}
		backends[i] = b
	}
	for i, b := range backends {
		var got *pb.Sandbox
		harness.Eventually(t, harness.Timeout, "the sandbox in the backend of "+domains[i], func() (bool, string) {
			var err error
			got, err = b.GetSandbox(callCtx(t), ns, "named")
			return err == nil, fmt.Sprint(err)
		})
		if want := "named." + ns + ".svc." + domains[i]; got.GetServiceFqdn() != want {
			t.Errorf("backend of %s: serviceFqdn %q, want %q", domains[i], got.GetServiceFqdn(), want)
		}
	}
}
