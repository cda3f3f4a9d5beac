package k8s_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/bridge"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/k8s/harness"
)

// TestBridgeClaimMetrics: claims through the bridge's Kubernetes backend
// are counted by outcome, template and pool, and timed, on the handler
// `sandpod bridge --metrics-listen` serves. The metrics are per process,
// so the test compares scrapes before and after its own calls.
func TestBridgeClaimMetrics(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	tmpl := makeTemplate(ns, "metrics-py")
	tmpl.Spec.Lifecycle.IdleTimeout = nil
	create(t, tmpl, makePool(ns, "metrics-pool", "metrics-py", 1))
	waitPoolReady(t, ns, "metrics-pool", 1, "")
	api := startBridge(t, ns)
	hs := httptest.NewServer(bridge.MetricsHandler())
	t.Cleanup(hs.Close)
	ctx := callCtx(t)

	before := scrapeClaims(t, hs.URL)
	warm, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "metrics-py", Namespace: ns})
	if err != nil || !warm.GetWarm() {
		t.Fatalf("claim from a ready pool: warm %v, %v", warm.GetWarm(), err)
	}
	if _, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: "metrics-py", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	_, err = api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "nope", Namespace: ns})
	wantCode(t, err, codes.NotFound, "claim of an unknown template")
	after := scrapeClaims(t, hs.URL)

	for k, want := range map[string]float64{
		"sandpod_api_claims_total{code=OK,method=ClaimSandbox,outcome=warm,pool=metrics-pool,template=metrics-py}": 1,
		"sandpod_api_claims_total{code=OK,method=CreateSandbox,outcome=cold,pool=,template=metrics-py}":            1,
		"sandpod_api_claims_total{code=NotFound,method=ClaimSandbox,outcome=error,pool=,template=}":                1,
		"sandpod_api_claim_duration_seconds_count{method=ClaimSandbox,outcome=warm}":                               1,
		"sandpod_api_claim_duration_seconds_count{method=CreateSandbox,outcome=cold}":                              1,
		"sandpod_api_claim_duration_seconds_count{method=ClaimSandbox,outcome=error}":                              1,
	} {
		if got := after[k] - before[k]; got != want {
			t.Errorf("%s went up by %v, want %v", k, got, want)
		}
	}
}

// scrapeClaims reads the claim counters and histogram counts as
// name{label=value,...} -> value.
func scrapeClaims(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	key := func(name string, m *dto.Metric) string {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		return name + "{" + strings.Join(ls, ",") + "}"
	}
	out := map[string]float64{}
	for _, m := range fams["sandpod_api_claims_total"].GetMetric() {
		out[key("sandpod_api_claims_total", m)] = m.GetCounter().GetValue()
	}
	for _, m := range fams["sandpod_api_claim_duration_seconds"].GetMetric() {
		out[key("sandpod_api_claim_duration_seconds_count", m)] = float64(m.GetHistogram().GetSampleCount())
	}
	return out
}
