package integration

import (
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// TestClaimMetrics claims warm and cold through `sandpod serve` and reads
// the counts and latencies back from --metrics-listen.
func TestClaimMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// A second template without a pool: its claims are cold.
	plain := strings.Replace(testserver.PythonTemplate, "name: python", "name: plain", 1)
	srv := testserver.Start(t, testserver.Options{Config: testserverDefaultPlus(plain), ExtraArgs: []string{"--metrics-listen", addr}})
	c := srv.Client()
	waitPoolReady(t, c, "python", 2)

	if _, warm := claim(t, c, "python"); !warm {
		t.Fatal("claim from a ready pool was not warm")
	}
	if _, warm := claim(t, c, "plain"); warm {
		t.Fatal("claim of a template with no pool was warm")
	}
	if _, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "no-such-template"})
	wantCode(t, err, codes.NotFound, "")

	families := scrape(t, "http://"+addr+"/metrics")
	counts := map[string]float64{}
	for _, m := range families["sandpod_api_claims_total"].GetMetric() {
		counts[labelString(m)] = m.GetCounter().GetValue()
	}
	want := map[string]float64{
		"code=OK,method=ClaimSandbox,outcome=warm,pool=python,template=python": 1,
		"code=OK,method=ClaimSandbox,outcome=cold,pool=,template=plain":        1,
		"code=OK,method=CreateSandbox,outcome=cold,pool=,template=python":      1,
		"code=NotFound,method=ClaimSandbox,outcome=error,pool=,template=":      1,
	}
	if len(counts) != len(want) {
		t.Errorf("sandpod_api_claims_total has %d series, want %d: %v", len(counts), len(want), counts)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("sandpod_api_claims_total{%s} = %v, want %v (all: %v)", k, counts[k], v, counts)
		}
	}
	// Every call is in the histogram too, once, by method and outcome.
	hist := map[string]uint64{}
	for _, m := range families["sandpod_api_claim_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		hist[labelString(m)] = h.GetSampleCount()
		t.Logf("sandpod_api_claim_duration_seconds{%s}: %d in %.4fs", labelString(m), h.GetSampleCount(), h.GetSampleSum())
		if h.GetSampleSum() <= 0 {
			t.Errorf("sandpod_api_claim_duration_seconds{%s} sums to %v", labelString(m), h.GetSampleSum())
		}
	}
	wantHist := map[string]uint64{
		"method=ClaimSandbox,outcome=warm":  1,
		"method=ClaimSandbox,outcome=cold":  1,
		"method=CreateSandbox,outcome=cold": 1,
		"method=ClaimSandbox,outcome=error": 1,
	}
	if len(hist) != len(wantHist) {
		t.Errorf("sandpod_api_claim_duration_seconds has %d series, want %d: %v", len(hist), len(wantHist), hist)
	}
	for k, v := range wantHist {
		if hist[k] != v {
			t.Errorf("sandpod_api_claim_duration_seconds_count{%s} = %d, want %d", k, hist[k], v)
		}
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// labelString is a metric's labels as name=value,... (sorted by name, as
// the exposition format sorts them).
func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}
