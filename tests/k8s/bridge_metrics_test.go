package k8s_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
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

// TestBridgeBinaryServesMetrics: the real `sandpod bridge` binary serves
// /metrics on --metrics-listen, with a cold claim (a template with no
// pool) in it.
func TestBridgeBinaryServesMetrics(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	tmpl := makeTemplate(ns, "metrics-bin")
	tmpl.Spec.Lifecycle.IdleTimeout = nil
	create(t, tmpl)
	dir := t.TempDir()
	addrFile, metricsAddr := filepath.Join(dir, "addr"), harness.FreeAddr(t)
	cmd := exec.Command(testserver.Binary(t), "bridge", "--kubeconfig", env.Kubeconfig, "--namespaces", ns,
		"--listen", "127.0.0.1:0", "--address-file", addrFile, "--metrics-listen", metricsAddr)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done; testserver.CheckNoRace(t, "sandpod bridge", log.String()) })
	var addr string
	harness.Eventually(t, harness.Timeout, "the bridge's address file", func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("sandpod bridge exited:\n%s", log.String())
		default:
		}
		b, err := os.ReadFile(addrFile)
		addr = string(b)
		return err == nil && addr != "", "no address yet"
	})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := pb.NewSandboxServiceClient(conn).ClaimSandbox(callCtx(t), &pb.ClaimSandboxRequest{Template: "metrics-bin", Namespace: ns})
	if err != nil || resp.GetWarm() {
		t.Fatalf("claim of a template with no pool: warm %v, %v", resp.GetWarm(), err)
	}
	got := scrapeClaims(t, "http://"+metricsAddr+"/metrics")
	for k, want := range map[string]float64{
		"sandpod_api_claims_total{code=OK,method=ClaimSandbox,outcome=cold,pool=,template=metrics-bin}": 1,
		"sandpod_api_claim_duration_seconds_count{method=ClaimSandbox,outcome=cold}":                    1,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], want, got)
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
