#!/usr/bin/env bash
# Fails when the Helm chart (deploy/helm/sandpod) with its default values
# renders other objects than deploy/install.yaml, and when it does not render
# with its optional templates switched on. Run by hack/check-generated.sh.
# The comparison (hack/kube/chartdiff) parses both, drops what only one side
# can have (the Namespace, the chart's preview key Secret, Helm's hooks,
# Helm's labels: hack/kube/chartdiff/normalize.go) and compares object by object.
set -euo pipefail
cd "$(dirname "$0")/../.."
helm=$(hack/helm.sh --print)
ns=$(awk '/^kind: Namespace/{f=1} f && /^  name:/{print $2; exit}' deploy/install.yaml)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$helm" lint deploy/helm/sandpod >/dev/null
"$helm" template sandpod deploy/helm/sandpod --namespace "$ns" --include-crds --skip-tests > "$tmp/chart.yaml"
go run ./hack/kube/chartdiff deploy/install.yaml "$tmp/chart.yaml"
# The optional Prometheus Operator objects: rendered, scraping the metrics
# Services with the labels and interval given (both ServiceMonitors), the
# warm-claims alert reading both claim histograms, and nothing else changed.
on=(--set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true
  --set bridge.metrics.serviceMonitor=true
  --set-string metrics.serviceMonitor.labels.release=prom --set metrics.serviceMonitor.interval=17s)
"$helm" lint deploy/helm/sandpod "${on[@]}" >/dev/null
"$helm" template sandpod deploy/helm/sandpod --namespace "$ns" --include-crds --skip-tests "${on[@]}" > "$tmp/monitoring.yaml"
go run ./hack/kube/chartdiff -monitoring -monitor-label release=prom -monitor-interval 17s deploy/install.yaml "$tmp/monitoring.yaml"
# The E2B-compatible API (bridge.e2b.enabled): the flags and the ports on.
"$helm" lint deploy/helm/sandpod --set bridge.e2b.enabled=true >/dev/null
"$helm" template sandpod deploy/helm/sandpod --namespace "$ns" --skip-tests --set bridge.e2b.enabled=true > "$tmp/e2b.yaml"
for want in '--e2b-listen=:50054' '--e2b-namespace=default' '{name: e2b, containerPort: 50054}' '{name: e2b, port: 50054, targetPort: e2b, appProtocol: http}'; do
  grep -qF -- "$want" "$tmp/e2b.yaml" || { echo "helm chart with bridge.e2b.enabled=true: no \"$want\""; exit 1; }
done
