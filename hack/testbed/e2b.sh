#!/usr/bin/env bash
# The E2B step of `make e2e` (hack/testbed/e2e.sh runs it after the Go
# suite): E2B's own SDK against the bridge on the node bed, once with a runc
# template and once with a gVisor one (docs/e2b.md, "On Kubernetes").
#
#   1. turns the bridge's E2B front door on as an operator of an install.yaml
#      cluster would (deploy/e2b's patches, and --e2b-namespace) and waits
#      for the rollout;
#   2. makes the namespace sandpod-e2b with the templates e2b-runc and
#      e2b-gvisor (runtimeClassName: gvisor), both without egress, each with
#      a warm pool;
#   3. runs tests/python/e2b_sdk (but the test named below) for each template
#      against the Service's E2B port (its ClusterIP, routed from the host),
#      with the first token of sandpod-bridge-tokens as the API key; each run
#      goes through hack/test/skipcheck like the other suites;
#   4. deletes the namespace when both passed (kept on failure for the logs).
#
# usage: hack/testbed/e2b.sh KUBECTL KUBECONFIG LOGDIR
# Environment: PYTEST, SKIPCHECK (set by e2e.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KUBECTL=$1 KUBECONFIG_FILE=$2 LOGS=$3
NS=sandpod-e2b
PYTHON_IMAGE=ghcr.io/sandpod/python:3.11
log() { echo "[$(date +%T)] e2b: $*" >&2; }
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }
T0=$(date +%s)

# What runs on the bed: all of tests/python/e2b_sdk (commands, files,
# terminals, the code interpreter, the sandbox's life, sync and async) but
# the one test that dials an address outside the bed to see it refused
# (docs/e2b.md says why: on a cluster, egress None is a NetworkPolicy, which
# tests/e2e's TestNetworkPolicyIsEnforced proves without leaving the bed).
DESELECT=(tests/python/e2b_sdk/test_e2b_commands.py::test_sandbox_has_no_egress)

# has_e2b_listen: the bridge's Deployment already serves the front door.
has_e2b_listen() {
  kc -n sandpod-system get deployment sandpod-bridge -o jsonpath='{.spec.template.spec.containers[0].args}' |
    grep -q -- '--e2b-listen='
}

# 1. The front door. install.yaml (re-applied by every e2e run) owns the
# args list as a whole: they are added again on each run, while the ports
# an earlier run added stay.
if ! has_e2b_listen; then
  log "turning on the bridge's E2B API (deploy/e2b)"
  if kc -n sandpod-system get deployment sandpod-bridge -o jsonpath='{.spec.template.spec.containers[0].ports[*].name}' | grep -qw e2b; then
    kc -n sandpod-system patch deployment sandpod-bridge --type json \
      -p '[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--e2b-listen=:50054"}]' >/dev/null
  else
    kc -n sandpod-system patch deployment sandpod-bridge --type json --patch-file "$REPO/deploy/e2b/bridge-deployment.yaml" >/dev/null
  fi
  kc -n sandpod-system patch deployment sandpod-bridge --type json \
    -p "[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--e2b-namespace=$NS\"}]" >/dev/null
fi
if ! kc -n sandpod-system get service sandpod-bridge -o jsonpath='{.spec.ports[*].name}' | grep -qw e2b; then
  kc -n sandpod-system patch service sandpod-bridge --type json --patch-file "$REPO/deploy/e2b/bridge-service.yaml" >/dev/null
fi
kc -n sandpod-system rollout status deployment/sandpod-bridge --timeout=180s >&2

# 2. The templates and their pools.
if kc get namespace "$NS" >/dev/null 2>&1; then
  log "deleting $NS left by an earlier run"
  kc delete sandboxclaims,sandboxes,sandboxwarmpools --all -n "$NS" --wait=true --timeout=180s >/dev/null
  kc delete namespace "$NS" --wait=true --timeout=180s >/dev/null
fi
kc create namespace "$NS" >/dev/null
for rt in runc gvisor; do
  rc_line=""
  [ "$rt" = gvisor ] && rc_line="runtimeClassName: gvisor"
  kc apply --server-side -f - >/dev/null <<EOF
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata: {name: e2b-$rt, namespace: $NS}
spec:
  $rc_line
  networkPolicy: {egress: None}
  podTemplate:
    spec:
      containers: [{name: main, image: $PYTHON_IMAGE}]
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata: {name: e2b-$rt, namespace: $NS}
spec: {templateRef: {name: e2b-$rt}, replicas: 2}
EOF
done

URL=http://$(kc -n sandpod-system get service sandpod-bridge -o jsonpath='{.spec.clusterIP}'):50054
KEY=$(kc -n sandpod-system get secret sandpod-bridge-tokens -o jsonpath='{.data.tokens}' | base64 -d | awk 'NR == 1 {print $1}')
[ -n "$KEY" ] || { log "no token in the Secret sandpod-bridge-tokens"; exit 1; }

# 3. The tests, per runtime.
rc=0
for rt in runc gvisor; do
  kc -n "$NS" wait --for=jsonpath='{.status.readyReplicas}'=2 "sandboxwarmpool/e2b-$rt" --timeout=300s >/dev/null ||
    { log "the warm pool e2b-$rt is not ready"; rc=1; continue; }
  log "pytest tests/python/e2b_sdk against $URL, template e2b-$rt"
  t=$(date +%s) result=passed
  (cd "$REPO" && SANDPOD_E2B_URL=$URL SANDPOD_E2B_API_KEY=$KEY SANDPOD_E2B_TEMPLATE=e2b-$rt SANDPOD_E2B_RUNTIME=$rt \
    "$PYTEST" -q -rs -p no:cacheprovider --junitxml="$LOGS/pytest-e2b-$rt.xml" "${DESELECT[@]/#/--deselect=}" tests/python/e2b_sdk &&
    "$SKIPCHECK" junit -allow "$REPO/hack/test/skips.allow" "$LOGS/pytest-e2b-$rt.xml") || { rc=1 result=FAILED; }
  log "template e2b-$rt: $result in $(($(date +%s) - t))s"
done

# 4. Clean up after a pass.
if [ $rc = 0 ]; then
  kc delete sandboxclaims,sandboxes,sandboxwarmpools --all -n "$NS" --wait=true --timeout=180s >/dev/null
  kc delete namespace "$NS" --wait=false >/dev/null
fi
log "$([ $rc = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - T0))s"
exit $rc
