package main

import (
	"reflect"
	"strings"
	"testing"
)

func obj(kind, ns, name string, labels map[string]any, spec map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	if labels != nil {
		md["labels"] = labels
	}
	o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}
	if spec != nil {
		o["spec"] = spec
	}
	return o
}

func hook(o map[string]any) map[string]any {
	o["metadata"].(map[string]any)["annotations"] = map[string]any{"helm.sh/hook": "pre-delete"}
	return o
}

func TestCompare(t *testing.T) {
	helm := map[string]any{"app.kubernetes.io/name": "sandpod", "helm.sh/chart": "sandpod-0.1.0",
		"app.kubernetes.io/instance": "sandpod", "app.kubernetes.io/version": "0.1.0"}
	plain := map[string]any{"app.kubernetes.io/name": "sandpod"}
	tests := []struct {
		name           string
		install, chart []map[string]any
		want           []string
	}{
		{
			name:    "Helm's labels, the Namespace and the preview key Secret are not compared",
			install: []map[string]any{obj("Namespace", "", "sandpod-system", nil, nil), obj("ServiceAccount", "ns", "a", plain, nil)},
			chart: []map[string]any{obj("ServiceAccount", "ns", "a", helm, nil),
				obj("Secret", "ns", "sandpod-bridge-preview-key", helm, nil)},
		},
		{
			name:    "Helm hooks are not compared",
			install: []map[string]any{obj("ServiceAccount", "ns", "a", plain, nil)},
			chart: []map[string]any{obj("ServiceAccount", "ns", "a", helm, nil), hook(obj("Job", "ns", "sandpod-uninstall-check", helm, nil)),
				hook(obj("ClusterRole", "", "sandpod-uninstall-check", helm, nil))},
		},
		{
			name:    "only Helm labels: the labels field goes away on both sides",
			install: []map[string]any{obj("ClusterRole", "", "c", nil, nil)},
			chart:   []map[string]any{obj("ClusterRole", "", "c", map[string]any{"helm.sh/chart": "x"}, nil)},
		},
		{
			name: "pod template labels are normalized too",
			install: []map[string]any{obj("Deployment", "ns", "d", nil, map[string]any{
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}}})},
			chart: []map[string]any{obj("Deployment", "ns", "d", nil, map[string]any{
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x", "helm.sh/chart": "y"}}}})},
		},
		{
			name:    "a missing label, an extra field and objects on one side",
			install: []map[string]any{obj("ServiceAccount", "ns", "a", map[string]any{"c": "controller"}, nil), obj("Role", "ns", "r", nil, nil)},
			chart: []map[string]any{obj("ServiceAccount", "ns", "a", nil, map[string]any{"type": "ClusterIP"}),
				obj("Secret", "ns", "other", nil, nil)},
			want: []string{
				"+ Secret/ns/other: only in the chart",
				"- Role/ns/r: only in install.yaml",
				"ServiceAccount/ns/a metadata.labels: - map[c:controller] + (absent)",
				"ServiceAccount/ns/a spec: - (absent) + map[type:ClusterIP]",
			},
		},
		{
			name:    "list elements are compared by position",
			install: []map[string]any{obj("Deployment", "ns", "d", nil, map[string]any{"args": []any{"a", "b"}})},
			chart:   []map[string]any{obj("Deployment", "ns", "d", nil, map[string]any{"args": []any{"a", "c"}})},
			want:    []string{"Deployment/ns/d spec.args[1]: - b + c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(NormalizeInstall(tt.install), NormalizeChart(tt.chart))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compare:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestTakeMonitoring(t *testing.T) {
	want := MonitorWant{Labels: map[string]string{"release": "prom"}, Interval: "17s"}
	svcLabels := func(c string) map[string]any {
		return map[string]any{"app.kubernetes.io/name": "sandpod", "app.kubernetes.io/component": c}
	}
	svc := func(c string) map[string]any {
		return obj("Service", "sp", "sandpod-"+c+"-metrics", svcLabels(c),
			map[string]any{"ports": []any{map[string]any{"name": "metrics", "port": 8080}}})
	}
	type smOpt struct {
		sel             map[string]any
		port, ns        string
		labels          map[string]any
		interval        string
		component, name string
	}
	sm := func(o smOpt) map[string]any {
		if o.sel == nil {
			o.sel = svcLabels(o.component)
		}
		if o.port == "" {
			o.port = "metrics"
		}
		if o.ns == "" {
			o.ns = "sp"
		}
		if o.labels == nil {
			o.labels = map[string]any{"release": "prom"}
		}
		if o.interval == "" {
			o.interval = "17s"
		}
		return obj("ServiceMonitor", "sp", "sandpod-"+o.component, o.labels, map[string]any{
			"selector":          map[string]any{"matchLabels": o.sel},
			"namespaceSelector": map[string]any{"matchNames": []any{o.ns}},
			"endpoints":         []any{map[string]any{"port": o.port, "interval": o.interval}},
		})
	}
	ctl := func(o smOpt) map[string]any { o.component = "controller"; return sm(o) }
	br := func(o smOpt) map[string]any { o.component = "bridge"; return sm(o) }
	ruleWith := func(expr string) map[string]any {
		return obj("PrometheusRule", "sp", "sandpod", nil, map[string]any{"groups": []any{map[string]any{
			"name": "sandpod", "rules": []any{map[string]any{"alert": "SandpodWarmClaimsSlow", "expr": expr}},
		}}})
	}
	both := `histogram_quantile(0.99, sum by (le) (rate(sandpod_claim_latency_seconds_bucket{mode="warm"}[10m]))) > 1 or ` +
		`histogram_quantile(0.99, sum by (le) (rate(sandpod_api_claim_duration_seconds_bucket{outcome="warm"}[10m]))) > 1`
	rule := ruleWith(both)
	good := func(extra ...map[string]any) []map[string]any {
		return append([]map[string]any{svc("controller"), svc("bridge")}, extra...)
	}
	tests := []struct {
		name string
		objs []map[string]any
		want string // a substring of the problems; empty: none
	}{
		{"good", good(ctl(smOpt{}), br(smOpt{}), rule), ""},
		{"no rule", good(ctl(smOpt{}), br(smOpt{})), "PrometheusRule: not rendered"},
		{"no controller monitor", good(br(smOpt{}), rule), "ServiceMonitor sandpod-controller: not rendered"},
		{"no bridge monitor", good(ctl(smOpt{}), rule), "ServiceMonitor sandpod-bridge: not rendered"},
		{"selector misses", good(ctl(smOpt{sel: svcLabels("bridge")}), br(smOpt{}), rule),
			"selects app.kubernetes.io/component=bridge"},
		{"wrong port", good(ctl(smOpt{port: "http"}), br(smOpt{}), rule), "names no port"},
		{"wrong namespace", good(ctl(smOpt{}), br(smOpt{ns: "other"}), rule), "sandpod-bridge: namespaceSelector [other] leaves out sp"},
		{"no metrics service", []map[string]any{svc("bridge"), ctl(smOpt{}), br(smOpt{}), rule}, "no Service sandpod-controller-metrics"},
		// What the bridge's ServiceMonitor got wrong before: the values'
		// labels and interval did not reach it.
		{"bridge without labels", good(ctl(smOpt{}), br(smOpt{labels: map[string]any{}}), rule),
			"ServiceMonitor sandpod-bridge: label release=(absent), want prom"},
		{"bridge without interval", good(ctl(smOpt{}), br(smOpt{interval: "30s"}), rule),
			"ServiceMonitor sandpod-bridge: endpoint interval 30s, want 17s"},
		{"alert blind to the bridge", good(ctl(smOpt{}), br(smOpt{}),
			ruleWith(`histogram_quantile(0.99, sum by (le) (rate(sandpod_claim_latency_seconds_bucket{mode="warm"}[10m]))) > 1`)),
			"does not read sandpod_api_claim_duration_seconds_bucket"},
		{"no slow-claims alert", good(ctl(smOpt{}), br(smOpt{}),
			obj("PrometheusRule", "sp", "sandpod", nil, map[string]any{"groups": []any{map[string]any{"name": "sandpod"}}})),
			"no alert SandpodWarmClaimsSlow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, problems := TakeMonitoring(tt.objs, want)
			for _, o := range rest {
				if k := str(o, "kind"); k == "ServiceMonitor" || k == "PrometheusRule" {
					t.Errorf("%s left in the rest", k)
				}
			}
			got := strings.Join(problems, "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
}
