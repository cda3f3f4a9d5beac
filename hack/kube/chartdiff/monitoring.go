package main

import (
	"fmt"
	"strings"
)

// MonitorWant is what the render was given: every ServiceMonitor (the
// controller's and the bridge's) must carry these labels and this interval.
type MonitorWant struct {
	Labels   map[string]string
	Interval string
}

// slowClaimMetrics are the histograms the SandpodWarmClaimsSlow alert must
// read: the controller's (SandboxClaim objects) and the API's (claims
// through the bridge, which make no SandboxClaim).
var slowClaimMetrics = []string{"sandpod_claim_latency_seconds_bucket", "sandpod_api_claim_duration_seconds_bucket"}

// TakeMonitoring removes the chart's ServiceMonitors and PrometheusRule from
// objs and says what is wrong with them: missing, a ServiceMonitor that
// would scrape nothing (its selector or port not matching its metrics
// Service, the mistake a render alone does not show) or that lacks the
// labels and interval of the values, or a warm-claims alert blind to one of
// the two claim paths.
func TakeMonitoring(objs []map[string]any, want MonitorWant) (rest []map[string]any, problems []string) {
	var rule map[string]any
	monitors := map[string]map[string]any{} // ServiceMonitor name -> object
	services := map[string]map[string]any{}
	for _, o := range objs {
		switch str(o, "kind") {
		case "ServiceMonitor":
			monitors[str(o, "metadata", "name")] = o
			continue
		case "PrometheusRule":
			rule = o
			continue
		case "Service":
			services[str(o, "metadata", "name")] = o
		}
		rest = append(rest, o)
	}
	if rule == nil {
		problems = append(problems, "PrometheusRule: not rendered with metrics.prometheusRule.enabled=true")
	} else {
		problems = append(problems, ruleProblems(rule)...)
	}
	for _, m := range []struct{ monitor, service, value string }{
		{"sandpod-controller", "sandpod-controller-metrics", "metrics.serviceMonitor.enabled"},
		{"sandpod-bridge", "sandpod-bridge-metrics", "bridge.metrics.serviceMonitor"},
	} {
		sm := monitors[m.monitor]
		switch {
		case sm == nil:
			problems = append(problems, fmt.Sprintf("ServiceMonitor %s: not rendered with %s=true", m.monitor, m.value))
		case services[m.service] == nil:
			problems = append(problems, fmt.Sprintf("ServiceMonitor %s: there is no Service %s to scrape", m.monitor, m.service))
		default:
			for _, p := range append(scrapeProblems(sm, services[m.service]), valuesProblems(sm, want)...) {
				problems = append(problems, strings.Replace(p, "ServiceMonitor:", "ServiceMonitor "+m.monitor+":", 1))
			}
		}
	}
	return rest, problems
}

// ruleProblems: the rule has groups, and its SandpodWarmClaimsSlow alert
// reads both claim histograms.
func ruleProblems(rule map[string]any) []string {
	groups, _ := get(rule, "spec", "groups").([]any)
	if len(groups) == 0 {
		return []string{"PrometheusRule: no rule groups"}
	}
	var expr string
	found := false
	for _, g := range groups {
		rules, _ := get(asMap(g), "rules").([]any)
		for _, r := range rules {
			if m := asMap(r); m["alert"] == "SandpodWarmClaimsSlow" {
				found = true
				expr, _ = m["expr"].(string)
			}
		}
	}
	if !found {
		return []string{"PrometheusRule: no alert SandpodWarmClaimsSlow"}
	}
	var out []string
	for _, metric := range slowClaimMetrics {
		if !strings.Contains(expr, metric) {
			out = append(out, fmt.Sprintf("PrometheusRule: SandpodWarmClaimsSlow does not read %s (expr %q)", metric, expr))
		}
	}
	return out
}

// valuesProblems: the ServiceMonitor carries the labels and every endpoint
// the interval the values asked for.
func valuesProblems(sm map[string]any, want MonitorWant) []string {
	var out []string
	labels, _ := get(sm, "metadata", "labels").(map[string]any)
	for k, v := range want.Labels {
		if labels[k] != v {
			out = append(out, fmt.Sprintf("ServiceMonitor: label %s=%v, want %s (metrics.serviceMonitor.labels)", k, show(labels[k]), v))
		}
	}
	eps, _ := get(sm, "spec", "endpoints").([]any)
	for _, e := range eps {
		if got := asMap(e)["interval"]; want.Interval != "" && got != want.Interval {
			out = append(out, fmt.Sprintf("ServiceMonitor: endpoint interval %v, want %s (metrics.serviceMonitor.interval)", show(got), want.Interval))
		}
	}
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// scrapeProblems: the ServiceMonitor must select svc by its labels, in its
// namespace, and name one of its ports.
func scrapeProblems(sm, svc map[string]any) []string {
	var out []string
	sel, _ := get(sm, "spec", "selector", "matchLabels").(map[string]any)
	labels, _ := get(svc, "metadata", "labels").(map[string]any)
	if len(sel) == 0 {
		out = append(out, "ServiceMonitor: empty selector")
	}
	for k, v := range sel {
		if labels[k] != v {
			out = append(out, fmt.Sprintf("ServiceMonitor: selects %s=%v, the metrics Service has %v", k, v, show(labels[k])))
		}
	}
	ns := str(svc, "metadata", "namespace")
	names, _ := get(sm, "spec", "namespaceSelector", "matchNames").([]any)
	if !contains(names, ns) {
		out = append(out, fmt.Sprintf("ServiceMonitor: namespaceSelector %v leaves out %s", names, ns))
	}
	ports, _ := get(svc, "spec", "ports").([]any)
	var portNames []any
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			portNames = append(portNames, m["name"])
		}
	}
	eps, _ := get(sm, "spec", "endpoints").([]any)
	if len(eps) == 0 {
		out = append(out, "ServiceMonitor: no endpoints")
	}
	for _, e := range eps {
		if m, ok := e.(map[string]any); !ok || !contains(portNames, m["port"]) {
			out = append(out, fmt.Sprintf("ServiceMonitor: endpoint %v names no port of the metrics Service %v", e, portNames))
		}
	}
	return out
}

func contains(l []any, v any) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}
