# sandpod — one binary (cmd/sandpod), a Python client, a Go client.
#
#   make run     build and start `sandpod serve` on 127.0.0.1:50051
#                (local engine; template "python" with a warm pool of 2)
#   make test    every check and test: lint, generated-code drift, Go unit
#                and integration tests (incl. a real kube-apiserver + etcd),
#                Python client tests against the real server
#   make generate / check-generated / bench / lint

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LISTEN ?= 127.0.0.1:50051
# Fuzz targets run briefly in `make test`; FUZZTIME=10m make test-go for longer.
FUZZTIME ?= 10s
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/sandpod/sandpod/core/agent.Version=$(VERSION)

.PHONY: all build run venv generate check-generated lint test test-go test-python kube-testbed bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/sandpod ./cmd/sandpod

run: build
	bin/sandpod serve --listen $(LISTEN)

# The Python environment: the client (editable) with its dev tools.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

generate: venv
	PYTHON=$(PY) hack/generate-proto.sh
	hack/kube/generate.sh

check-generated: venv
	PYTHON=$(PY) hack/check-generated.sh

lint: venv
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(VENV)/bin/ruff check clients/python tests/python notebooks
	$(VENV)/bin/ruff format --check clients/python tests/python notebooks

# kube-apiserver, etcd and kwok built from their Go modules, cached outside
# the repository (~/.cache/sandpod); only a cold cache pays for the build.
kube-testbed:
	hack/kube/build.sh

test: lint check-generated build kube-testbed test-go test-python

test-go:
	SANDPOD_KUBE_BIN=$$(hack/kube/build.sh --print) SANDPOD_BIN=$(CURDIR)/bin/sandpod \
	  $(GO) test -count=1 -timeout 30m ./...
	$(GO) test -run '^$$' -fuzz FuzzCleanPath -fuzztime $(FUZZTIME) ./core/agent
	$(GO) test -run '^$$' -fuzz FuzzRequestValidation -fuzztime $(FUZZTIME) ./bridge

test-python: venv build
	SANDPOD_BIN=$(CURDIR)/bin/sandpod $(VENV)/bin/pytest -q tests/python

# One Markdown table (and JSON under _output/bench); see docs/performance.md.
bench: build
	$(GO) run ./bench

clean:
	rm -rf bin $(VENV)
