package main

import "fmt"

// TakeMonitoring removes the chart's ServiceMonitor and PrometheusRule from
// objs and says what is wrong with them: missing, or a ServiceMonitor that
// would scrape nothing (its selector or port not matching the controller's
// metrics Service, the mistake a render alone does not show).
func TakeMonitoring(objs []map[string]any) (rest []map[string]any, problems []string) {
	var sm, rule, svc map[string]any
	for _, o := range objs {
		switch str(o, "kind") {
		case "ServiceMonitor":
			sm = o
			continue
		case "PrometheusRule":
			rule = o
			continue
		case "Service":
			if str(o, "metadata", "name") == "sandpod-controller-metrics" {
				svc = o
			}
		}
		rest = append(rest, o)
	}
	if rule == nil {
		problems = append(problems, "PrometheusRule: not rendered with metrics.prometheusRule.enabled=true")
	} else if groups, _ := get(rule, "spec", "groups").([]any); len(groups) == 0 {
		problems = append(problems, "PrometheusRule: no rule groups")
	}
	if sm == nil {
		return rest, append(problems, "ServiceMonitor: not rendered with metrics.serviceMonitor.enabled=true")
	}
	if svc == nil {
		return rest, append(problems, "ServiceMonitor: there is no Service sandpod-controller-metrics to scrape")
	}
	return rest, append(problems, scrapeProblems(sm, svc)...)
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
