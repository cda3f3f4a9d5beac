"""End-to-end tests of the Python client against the bridge on a real cluster.

They run when SANDPOD_E2E_KUBECONFIG names the admin kubeconfig of a cluster
with sandpod installed (``make e2e`` sets it up); otherwise they skip. The
bridge is reached as a user would: its Service's ClusterIP (routed from the
host on the node bed) with a token from the Secret ``sandpod-bridge-tokens``.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

import sandpod

PYTHON_IMAGE = "ghcr.io/sandpod/python:3.11"
WAIT_SECONDS = 180.0


class Cluster:
    """kubectl against the cluster under test."""

    def __init__(self, kubeconfig: str, kubectl: str) -> None:
        self.kubeconfig = kubeconfig
        self.kubectl = kubectl

    def run(self, *args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [self.kubectl, "--kubeconfig", self.kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def get(self, *args: str) -> dict:
        return json.loads(self.run("get", "-o", "json", *args))

    def apply(self, obj: dict) -> None:
        self.run("apply", "--server-side", "-f", "-", stdin=json.dumps(obj))

    def wait_for(self, what: str, cond, timeout: float = WAIT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                ok, last = cond()
            except RuntimeError as err:
                ok, last = False, str(err)
            if ok:
                return
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}: {last}")

    def bridge_address(self) -> str:
        svc = self.get("service", "-n", "sandpod-system", "sandpod-bridge")
        port = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "grpc")
        return f"{svc['spec']['clusterIP']}:{port}"

    def bridge_token(self) -> str:
        sec = self.get("secret", "-n", "sandpod-system", "sandpod-bridge-tokens")
        return base64.b64decode(sec["data"]["tokens"]).decode().split()[0]


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    kubeconfig = os.environ.get("SANDPOD_E2E_KUBECONFIG")
    if not kubeconfig:
        pytest.skip("SANDPOD_E2E_KUBECONFIG is not set: run `make e2e`")
    return Cluster(kubeconfig, os.environ.get("SANDPOD_E2E_KUBECTL", "kubectl"))


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    ns = f"e2e-py-{uuid.uuid4().hex[:8]}"
    cluster.run("create", "namespace", ns)
    try:
        yield ns
    finally:
        # Sandboxes first (their finalizers need the controller), then the namespace.
        cluster.run(
            "delete",
            "sandboxclaims,sandboxes,sandboxwarmpools",
            "--all",
            "-n",
            ns,
            "--wait=true",
            "--timeout=120s",
        )
        cluster.run("delete", "namespace", ns, "--wait=false")


@pytest.fixture
def client(cluster: Cluster, namespace: str) -> Iterator[sandpod.Client]:
    with sandpod.Client(
        cluster.bridge_address(),
        token=cluster.bridge_token(),
        namespace=namespace,
        timeout=WAIT_SECONDS,
    ) as c:
        yield c


def template(namespace: str, name: str, **spec: object) -> dict:
    return {
        "apiVersion": "sandpod.dev/v1alpha1",
        "kind": "SandboxTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "podTemplate": {"spec": {"containers": [{"name": "main", "image": PYTHON_IMAGE}]}},
            **spec,
        },
    }


def pool(namespace: str, name: str, template_name: str, replicas: int) -> dict:
    return {
        "apiVersion": "sandpod.dev/v1alpha1",
        "kind": "SandboxWarmPool",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"templateRef": {"name": template_name}, "replicas": replicas},
    }
