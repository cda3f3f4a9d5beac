# sandpod — one binary (cmd/sandpod), a Python client, a Go client.
#
#   make run     build and start `sandpod serve` on 127.0.0.1:50051 (gRPC)
#                and 127.0.0.1:50052 (HTTP/JSON, docs/http.md)
#                (local engine; template "python" with a warm pool of 2)
#   make test    every check and test: lint, generated-code drift, Go unit
#                and integration tests (incl. a real kube-apiserver + etcd),
#                Python client tests against the real server, and the
#                end-to-end suite on a real single-node cluster (make e2e);
#                a skip not in hack/test/skips.allow, or a data race, fails it
#   make generate / check-generated / bench / lint

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LISTEN ?= 127.0.0.1:50051
PREVIEW_LISTEN ?= 127.0.0.1:50053
HTTP_LISTEN ?= 127.0.0.1:50052
E2B_LISTEN ?= 127.0.0.1:50054
# Fuzz targets run briefly in `make test`; FUZZTIME=5000000x make test-go for
# longer. A count, not a duration: a duration-bounded run on a loaded machine
# can fail with a bare "context deadline exceeded" when a worker misses the
# coordinator's deadline (go.dev/issue/75804), with no crasher behind it.
FUZZTIME ?= 60000x
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/sandpod/sandpod/core/agent.Version=$(VERSION)
# Every suite of `make test` runs through hack/test/skipcheck: a test that
# skips fails the run unless hack/test/skips.allow names it, with why (a
# hand-run `go test ./...` may still skip). The Go suites print as plain
# `go test` would; pytest writes a junit report the check reads.
SKIPCHECK := bin/skipcheck
# The Go and Python suites run their `sandpod serve`s from a binary built
# with the race detector: the first race kills serve (exit 66) and the
# harness fails the test with the report (tests/testserver/race.go,
# tests/python/integration/conftest.py).
RACE_BIN := bin/sandpod-race
# The product's own packages (core/, bridge/, cmd/) run their tests with
# -race too: the engine, agent, controller and bridge in process. The
# suites (tests/, bench/) drive servers, which run from $(RACE_BIN); hack/
# holds tools (chartdiff takes 6 min under -race).
SUITES := -e /tests/ -e /bench -e /hack/
# -race also turns on checkptr, which throws (a fatal error, not a panic)
# when bbolt's pointer arithmetic over a damaged store file lands in the Go
# heap: `sandpod state check` and its test read damaged stores on purpose,
# and in the product binary (no checkptr) such a read is a recovered fault.
# So bbolt alone is built without checkptr; the race detector stays on.
RACEFLAGS := -race -gcflags=go.etcd.io/bbolt/...=-d=checkptr=0
# tests/e2e needs the node bed: `make e2e` runs it (hack/testbed/e2e.sh),
# with the same skip check; test-go leaves it out.
E2E_PKG := /tests/e2e$$
export GORACE := halt_on_error=1
# The Go modules: the root (the server) and, nested, the Go client and the
# stubs it imports (their own modules, so that importing the client does not
# pull in the server's dependencies) and the HTTP gateway. `./...` at the
# root does not descend into them, so vet and test visit each.
GO_MODULES := . clients/go proto proto/sandpod/v1/gateway hack/testbed/csihostpath

.PHONY: all build build-race skipcheck run venv generate check-generated lint test test-go test-python kwok-bed bench clean \
	node-bed-build node-bed-prebuild node-bed-up node-bed-down e2e

all: build

# The binary, plus what its local engine runs sandboxes with: the agent
# (bin/sandpod-agent, cmd/sandpod-agent), runc (built once from its Go module
# into ~/.cache/sandpod, linked as bin/runc) and pasta.
# A first build takes minutes (modules, ~900 packages, runc): the scripts
# say what they are doing every 30 s while it lasts.
build:
	@GO=$(GO) hack/local/build.sh bin/sandpod -ldflags "$(LDFLAGS)"
	@hack/local/deps.sh bin

# bin/sandpod-race (and the agent its serve runs, bin/sandpod-agent-race):
# serve with the race detector, for the Go suites (a second build of every
# package: ~5 min cold on 2 cores, then cached).
build-race: build
	@GO=$(GO) hack/local/build.sh $(RACE_BIN) $(RACEFLAGS) -ldflags "$(LDFLAGS)"

skipcheck:
	@$(GO) build -o $(SKIPCHECK) ./hack/test/skipcheck

run: build
	bin/sandpod serve --listen $(LISTEN) --http-listen $(HTTP_LISTEN) --preview-listen $(PREVIEW_LISTEN) --e2b-listen $(E2B_LISTEN)

# The Python environment: the client (editable) with its dev tools.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

generate: venv
	PYTHON=$(PY) hack/generate-proto.sh
	$(PY) hack/unasync.py
	hack/kube/generate.sh

# Generated code in sync with its sources, and buf lint + buf breaking on
# proto/ against main (hack/proto/lint.sh; buf built once, ~2 min cold).
check-generated: venv
	PYTHON=$(PY) hack/check-generated.sh

lint: venv
	@set -e; for m in $(GO_MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./...); done
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(VENV)/bin/ruff check clients/python tests/python tests/e2e/python notebooks bench
	$(VENV)/bin/ruff format --check clients/python tests/python tests/e2e/python notebooks bench

# Two test beds for Kubernetes, both built from Go modules and cached in
# ~/.cache/sandpod (only a cold cache pays for the build):
#   the kwok bed (hack/kube): kube-apiserver, etcd and kwok, which simulates
#     a node and its pods; the controller and bridge/kube at speed and scale
#     (tests/k8s, make bench's kwok suite);
#   the node bed (hack/testbed): a real single-node Kubernetes with containerd,
#     runc and gVisor; real pods end to end (make e2e, tests/e2e).
kwok-bed:
	hack/kube/build.sh

test: lint check-generated build kwok-bed node-bed-prebuild test-go test-python e2e

# On a fresh machine the node bed's cold build (~25 min) would start only at
# e2e. Started here in the background at the lowest priority, it uses the
# CPU the Go and Python suites leave idle (they wait on sandboxes and
# timers); e2e's own build.sh waits for it (a lock) and finds it done. On a
# warm cache it ends at once.
node-bed-prebuild:
	@mkdir -p _output
	@nice -n 19 hack/testbed/build.sh >_output/node-bed-build.log 2>&1 </dev/null & \
	  echo "node bed: building in the background at low priority (log: _output/node-bed-build.log)"

# A kwok bed that is not built would make tests/k8s skip: fail here, saying so.
test-go: build-race skipcheck
	@test -x "$$(hack/kube/build.sh --print)/kube-apiserver" || { echo "the kwok bed is not built: hack/kube/build.sh"; exit 1; }
	set -o pipefail; $(GO) test $(RACEFLAGS) -json -count=1 -timeout 30m $$($(GO) list ./... | grep -v $(SUITES)) | $(SKIPCHECK) go
	set -o pipefail; SANDPOD_KUBE_BIN=$$(hack/kube/build.sh --print) SANDPOD_BIN=$(CURDIR)/$(RACE_BIN) \
	  $(GO) test -json -count=1 -timeout 30m $$($(GO) list ./... | grep $(SUITES) | grep -v '$(E2E_PKG)') | $(SKIPCHECK) go
	@# `go list -m all` first fetches every go.mod of a module's graph into
	@# the module cache (a fresh machine has only what the builds needed):
	@# clients/go's TestConsumerNeedsOnlyTheClient lists a consumer's graph
	@# offline from that cache.
	@set -eo pipefail; for m in $(filter-out .,$(GO_MODULES)); do \
	  (cd $$m && $(GO) list -m all >/dev/null && $(GO) test -json -count=1 ./...) | $(SKIPCHECK) go; done
	$(GO) test -run '^$$' -fuzz FuzzCleanPath -fuzztime $(FUZZTIME) ./core/agent
	$(GO) test -run '^$$' -fuzz FuzzRequestValidation -fuzztime $(FUZZTIME) ./bridge

test-python: venv build-race skipcheck
	@mkdir -p _output
	SANDPOD_BIN=$(CURDIR)/$(RACE_BIN) $(VENV)/bin/pytest -q -rs --junitxml=_output/pytest.xml tests/python
	$(SKIPCHECK) junit _output/pytest.xml

# The node bed (hack/testbed, needs root): etcd, the Kubernetes components,
# containerd with runc and gVisor, CNI, all built from Go modules into
# ~/.cache/sandpod (cold: ~25 min on 2 cores; then cached).
node-bed-build:
	hack/testbed/build.sh

# Build, make the images (sandpod from this tree), start; prints the
# kubeconfig. Idempotent: on a running bed it only re-imports changed images.
node-bed-up: node-bed-build
	VERSION=$(VERSION) hack/testbed/images.sh
	hack/testbed/up.sh

node-bed-down:
	hack/testbed/down.sh

# sandpod installed from deploy/install.yaml on the node bed, then the Go
# (tests/e2e) and Python (tests/e2e/python) end-to-end suites, and E2B's SDK
# against the bridge under runc and gVisor (hack/testbed/e2b.sh). Starts the
# bed unless it is up, and stops it again if it started it; logs of a
# failure land in _output/e2e-logs. E2E_RUN=Pattern narrows the Go suite
# (and leaves out the E2B step unless E2E_E2B=1).
e2e: venv
	VERSION=$(VERSION) PYTEST=$(CURDIR)/$(VENV)/bin/pytest hack/testbed/e2e.sh

# One Markdown table (and JSON under _output/bench); see docs/performance.md.
bench: build
	$(GO) run ./bench

clean:
	rm -rf bin $(VENV)
