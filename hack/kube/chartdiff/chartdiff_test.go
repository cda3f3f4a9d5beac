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
	svcLabels := map[string]any{"app.kubernetes.io/name": "sandpod", "app.kubernetes.io/component": "controller"}
	svc := func() map[string]any {
		return obj("Service", "sp", "sandpod-controller-metrics", svcLabels,
			map[string]any{"ports": []any{map[string]any{"name": "metrics", "port": 8080}}})
	}
	sm := func(sel map[string]any, port string, ns string) map[string]any {
		return obj("ServiceMonitor", "sp", "sandpod-controller", nil, map[string]any{
			"selector":          map[string]any{"matchLabels": sel},
			"namespaceSelector": map[string]any{"matchNames": []any{ns}},
			"endpoints":         []any{map[string]any{"port": port}},
		})
	}
	rule := obj("PrometheusRule", "sp", "sandpod", nil, map[string]any{"groups": []any{map[string]any{"name": "sandpod"}}})
	tests := []struct {
		name string
		objs []map[string]any
		want string // a substring of the problems; empty: none
	}{
		{"good", []map[string]any{svc(), sm(svcLabels, "metrics", "sp"), rule}, ""},
		{"no rule", []map[string]any{svc(), sm(svcLabels, "metrics", "sp")}, "PrometheusRule: not rendered"},
		{"no monitor", []map[string]any{svc(), rule}, "ServiceMonitor: not rendered"},
		{"selector misses", []map[string]any{svc(), sm(map[string]any{"app.kubernetes.io/component": "bridge"}, "metrics", "sp"), rule},
			"selects app.kubernetes.io/component=bridge"},
		{"wrong port", []map[string]any{svc(), sm(svcLabels, "http", "sp"), rule}, "names no port"},
		{"wrong namespace", []map[string]any{svc(), sm(svcLabels, "metrics", "other"), rule}, "leaves out sp"},
		{"no metrics service", []map[string]any{sm(svcLabels, "metrics", "sp"), rule}, "no Service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, problems := TakeMonitoring(tt.objs)
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
