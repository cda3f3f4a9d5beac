package k8s_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sandpod/sandpod/hack/kube/harness"
)

func TestMetricsEndpoint(t *testing.T) {
	harness.Skip(t, env)
	addr := harness.FreeAddr(t)
	ns := env.Namespace(t)
	env.StartManager(t, harness.ManagerOptions{MetricsAddr: addr}, ns)
	create(t, makeTemplate(ns, "py"), makeTemplate(ns, "nopool"), makePool(ns, "pool", "py", 1))
	waitPoolReady(t, ns, "pool", 1, "")
	create(t, makeClaim(ns, "m1", "py"), makeClaim(ns, "m2", "nopool"))
	waitClaimReady(t, ns, "m1")
	waitClaimReady(t, ns, "m2")

	want := []string{
		`sandpod_claim_latency_seconds_bucket{mode="warm"`,
		`sandpod_claim_latency_seconds_bucket{mode="cold"`,
		`sandpod_pool_ready_replicas{namespace="` + ns + `",pool="pool"}`,
		`sandpod_pool_replicas{namespace="` + ns + `",pool="pool"}`,
		`sandpod_sandboxes{phase="Running"}`,
		`sandpod_reconcile_errors_total`,
	}
	var body string
	harness.Eventually(t, harness.Timeout, "metrics", func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false, "missing " + w
			}
		}
		return true, ""
	})
}
