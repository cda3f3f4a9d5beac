package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestChartMonitoring renders the chart with the real helm (hack/helm.sh)
// with both ServiceMonitors and the PrometheusRule on, and labels and an
// interval set: both ServiceMonitors carry them and the warm-claims alert
// reads the controller's and the bridge's histograms.
func TestChartMonitoring(t *testing.T) {
	helm, chart := helmAndChart(t)
	out, err := exec.Command(helm, "template", "sandpod", chart, "-n", "sp", "--skip-tests",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true",
		"--set", "bridge.metrics.serviceMonitor=true",
		"--set-string", "metrics.serviceMonitor.labels.release=prom", "--set", "metrics.serviceMonitor.interval=17s").CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	f := filepath.Join(t.TempDir(), "chart.yaml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := load(f)
	if err != nil {
		t.Fatal(err)
	}
	_, problems := TakeMonitoring(objs, MonitorWant{Labels: map[string]string{"release": "prom"}, Interval: "17s"})
	for _, p := range problems {
		t.Error(p)
	}
}
