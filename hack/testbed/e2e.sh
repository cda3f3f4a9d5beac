#!/usr/bin/env bash
# `make e2e`: sandpod end to end on the node bed.
# shellcheck disable=SC2329 # finish and collect_logs run from the EXIT trap
#
#   1. builds what is missing (hack/testbed/build.sh: cached binaries) and
#      the images (sandpod from this tree, python, pause);
#   2. brings the bed up unless it is up already (and then remembers that
#      this run did not start it);
#   3. installs sandpod like a user: kubectl apply --server-side -f
#      deploy/install.yaml, and waits for its Deployments to be Available
#      (restarted first when the bed was already up: the image may be new);
#   4. runs the Go suite (tests/e2e), the Python one (tests/e2e/python)
#      when there is one, then E2B's SDK against the bridge under runc and
#      gVisor (hack/testbed/e2b.sh: a subset of tests/python/e2b_sdk);
#   5. on failure, gathers every component's log, the cluster's objects and
#      events, and sandpod's pod logs into _output/e2e-logs/;
#   6. always stops the bed if this run started it (KEEP_TESTBED=1: leave it
#      up, for a look with kubectl --kubeconfig _output/testbed/conf/admin.kubeconfig).
#
# Both suites run through hack/test/skipcheck: a test that skips (no
# cluster, a missing precondition) fails the run unless
# hack/test/skips.allow names it; so does a missing or empty kubeconfig.
#
# Environment: PYTEST (the pytest to run the Python suites with; default
# .venv/bin/pytest), E2E_RUN (go test -run pattern; it also leaves out the
# E2B step unless E2E_E2B=1), SANDPOD_TESTBED_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SKIPCHECK=${SKIPCHECK:-$REPO/bin/skipcheck}

# need_kubeconfig FILE: the suites would skip every test without one.
need_kubeconfig() {
  if [ -z "$1" ] || [ ! -s "$1" ]; then
    echo "e2e: no kubeconfig from hack/testbed/up.sh (${1:-empty path}): the suites would skip every test" >&2
    return 1
  fi
}

# go_suite JSONLOG: prints the `go test -json` stream on stdin as go test
# -v would, keeps the stream in JSONLOG, and fails on a failed test, a
# failed build or a skip that hack/test/skips.allow does not name.
go_suite() {
  tee "$1" | "$SKIPCHECK" go -v -allow "$REPO/hack/test/skips.allow"
}

# py_suite REPORT: the same for a pytest --junitxml report.
py_suite() {
  "$SKIPCHECK" junit -allow "$REPO/hack/test/skips.allow" "$1"
}

# Sourced (hack/testbed/e2e_test.go): the functions only.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi
export SANDPOD_TESTBED_DIR=${SANDPOD_TESTBED_DIR:-$REPO/_output/testbed}
R=$SANDPOD_TESTBED_DIR
LOGS=$REPO/_output/e2e-logs
PYTEST=${PYTEST:-$REPO/.venv/bin/pytest}
log() { echo "[$(date +%T)] e2e: $*" >&2; }
T0=$(date +%s)

BIN=$("$HERE/build.sh" | tail -1)
kc() { "$BIN/kubectl" --kubeconfig "$R/conf/admin.kubeconfig" "$@"; }

STARTED=0
collect_logs() {
  mkdir -p "$LOGS"
  log "collecting logs into $LOGS"
  cp "$R"/logs/*.log "$LOGS/" 2>/dev/null
  [ -d "$R/state/pod-logs" ] && cp -r "$R/state/pod-logs" "$LOGS/pod-logs" 2>/dev/null
  {
    for kind in all sandboxes sandboxclaims sandboxwarmpools sandboxtemplates pv pvc events; do
      echo "=== kubectl get $kind -A -o wide"
      kc get "$kind" -A -o wide 2>&1
    done
  } > "$LOGS/cluster.txt"
  kc get sandboxes,sandboxclaims,sandboxwarmpools -A -o yaml > "$LOGS/sandpod-objects.yaml" 2>&1
  kc describe pods -A > "$LOGS/pods-describe.txt" 2>&1
  local pod
  for pod in $(kc -n sandpod-system get pods -o name 2>/dev/null); do
    kc -n sandpod-system logs "$pod" --all-containers --prefix > "$LOGS/sandpod-system-${pod#pod/}.log" 2>&1
    kc -n sandpod-system logs "$pod" --all-containers --prefix --previous > "$LOGS/sandpod-system-${pod#pod/}.previous.log" 2>/dev/null ||
      rm -f "$LOGS/sandpod-system-${pod#pod/}.previous.log"
  done
}
finish() {
  local rc=$?
  set +e
  if [ "$rc" != 0 ]; then
    [ -f "$R/conf/admin.kubeconfig" ] && collect_logs
    log "FAILED (exit $rc) after $(($(date +%s) - T0))s; logs in $LOGS"
  else
    log "passed in $(($(date +%s) - T0))s"
  fi
  if [ "$STARTED" = 1 ] && [ "${KEEP_TESTBED:-0}" != 1 ]; then
    "$HERE/down.sh"
  elif [ "$STARTED" = 1 ]; then
    log "node bed left up (KEEP_TESTBED=1): hack/testbed/down.sh stops it"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM   # through finish

rm -rf "$LOGS"
if ! "$HERE/up.sh" --status >/dev/null 2>&1; then
  STARTED=1
  # A bed that is not up may have left mounts, iptables chains or a stale
  # state dir behind (e.g. its processes were killed): start from clean.
  "$HERE/down.sh" 2>/dev/null
fi
"$HERE/images.sh"
KUBECONFIG_FILE=$("$HERE/up.sh" | tail -1)
need_kubeconfig "$KUBECONFIG_FILE"
(cd "$REPO" && go build -o "$SKIPCHECK" ./hack/test/skipcheck)

log "installing sandpod (deploy/install.yaml)"
kc apply --server-side --force-conflicts -f "$REPO/deploy/install.yaml" >/dev/null
# The operator's step of the install docs: the bridge's static tokens
# (tests read the first one from the Secret).
if kc -n sandpod-system get deployment sandpod-bridge >/dev/null 2>&1 &&
  ! kc -n sandpod-system get secret sandpod-bridge-tokens >/dev/null 2>&1; then
  kc -n sandpod-system create secret generic sandpod-bridge-tokens --from-literal=tokens="$(openssl rand -hex 32)" >/dev/null
fi
# And the preview signing key (a required Secret: signed preview URLs
# outlive a bridge restart).
if kc -n sandpod-system get deployment sandpod-bridge >/dev/null 2>&1 &&
  ! kc -n sandpod-system get secret sandpod-bridge-preview-key >/dev/null 2>&1; then
  kc -n sandpod-system create secret generic sandpod-bridge-preview-key --from-literal=key="$(openssl rand -hex 32)" >/dev/null
fi
DEPLOYS=$(kc -n sandpod-system get deployments -o name)
if [ $STARTED = 0 ]; then
  # The images were re-imported under the same tags: new pods pick them up.
  # shellcheck disable=SC2086 # one argument per deployment
  kc -n sandpod-system rollout restart $DEPLOYS >/dev/null
fi
for d in $DEPLOYS; do
  if ! kc -n sandpod-system rollout status "$d" --timeout=180s; then
    kc -n sandpod-system get pods -o wide >&2
    exit 1
  fi
done
kc -n sandpod-system wait --for=condition=Available deployments --all --timeout=60s >/dev/null
log "sandpod is up after $(($(date +%s) - T0))s"

rc=0
log "go test ./tests/e2e/..."
mkdir -p "$LOGS"
# shellcheck disable=SC2086 # E2E_RUN expands to nothing or to -run PATTERN
(cd "$REPO" && SANDPOD_E2E_KUBECONFIG=$KUBECONFIG_FILE SANDPOD_E2E_KUBECTL=$BIN/kubectl SANDPOD_E2E_LOGS=$LOGS \
  go test -json -count=1 -timeout 30m ${E2E_RUN:+-run "$E2E_RUN"} ./tests/e2e/... 2>&1 |
  go_suite "$LOGS/go-test.json" | tee "$LOGS/go-test.log") || rc=1
if [ -d "$REPO/tests/e2e/python" ] && compgen -G "$REPO/tests/e2e/python/test_*.py" >/dev/null; then
  log "pytest tests/e2e/python"
  (cd "$REPO" && SANDPOD_E2E_KUBECONFIG=$KUBECONFIG_FILE SANDPOD_E2E_KUBECTL=$BIN/kubectl SANDPOD_E2E_LOGS=$LOGS \
    "$PYTEST" -q -rs --junitxml="$LOGS/pytest.xml" tests/e2e/python && py_suite "$LOGS/pytest.xml") || rc=1
fi
# E2B's SDK against the bridge, under runc and gVisor (hack/testbed/e2b.sh).
# Not when E2E_RUN narrows the Go suite, unless E2E_E2B=1 asks for it.
if [ -z "${E2E_RUN:-}" ] || [ "${E2E_E2B:-0}" = 1 ]; then
  log "E2B SDK tests (hack/testbed/e2b.sh)"
  PYTEST=$PYTEST SKIPCHECK=$SKIPCHECK "$HERE/e2b.sh" "$BIN/kubectl" "$KUBECONFIG_FILE" "$LOGS" || rc=1
fi
exit $rc
