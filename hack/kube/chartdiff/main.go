// Command chartdiff fails when the Helm chart, rendered with its default
// values, does not make the same Kubernetes objects as deploy/install.yaml.
// hack/kube/check-helm.sh runs it (from `make check-generated`):
//
//	go run ./hack/kube/chartdiff deploy/install.yaml rendered.yaml
//	go run ./hack/kube/chartdiff -monitoring -monitor-label release=prom -monitor-interval 17s deploy/install.yaml rendered.yaml
//
// -monitoring: rendered with metrics.serviceMonitor, bridge.metrics.serviceMonitor
// and metrics.prometheusRule on; the objects must be there (each
// ServiceMonitor selecting its metrics Service by its labels and port, with
// the labels and interval the render was given, and the warm-claims alert
// reading both claim histograms), and the rest must match as usual.
//
// Both YAML streams are parsed (comments and key order do not matter),
// normalized (normalize.go says what is dropped and why), keyed by
// kind/namespace/name and compared field by field. A difference is printed
// as the object, the field path and both values.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	monitoring := flag.Bool("monitoring", false, "the chart was rendered with its ServiceMonitors and PrometheusRule on")
	var want MonitorWant
	flag.Func("monitor-label", "KEY=VALUE given as metrics.serviceMonitor.labels (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("want KEY=VALUE")
		}
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		want.Labels[k] = v
		return nil
	})
	flag.StringVar(&want.Interval, "monitor-interval", "", "the metrics.serviceMonitor.interval given")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: chartdiff [-monitoring [-monitor-label K=V] [-monitor-interval D]] INSTALL.yaml HELM-TEMPLATE.yaml")
		os.Exit(2)
	}
	install, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	chart, err := load(flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var diffs []string
	if *monitoring {
		chart, diffs = TakeMonitoring(chart, want)
	}
	diffs = append(diffs, Compare(NormalizeInstall(install), NormalizeChart(chart))...)
	if len(diffs) == 0 {
		if *monitoring {
			fmt.Println("helm template with the ServiceMonitors and PrometheusRule: rendered, scraping the metrics Services with the given labels and interval, the warm-claims alert on both claim paths; the rest as deploy/install.yaml")
		} else {
			fmt.Println("helm template (default values) makes the same objects as deploy/install.yaml")
		}
		return
	}
	fmt.Fprintf(os.Stderr, "helm template (default values) differs from deploy/install.yaml (- install.yaml, + chart):\n")
	for _, d := range diffs {
		fmt.Fprintln(os.Stderr, "  "+d)
	}
	fmt.Fprintln(os.Stderr, "fix deploy/helm/sandpod (or deploy/base, then hack/kube/generate.sh) so they agree")
	os.Exit(1)
}

// load parses a multi-document YAML file into its non-empty objects.
func load(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
}
