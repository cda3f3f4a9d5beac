"""The E2B tests drive sandpod only through E2B's own SDKs (`e2b`,
`e2b_code_interpreter`, pinned in pyproject's dev extras) as their users do:
E2B_API_URL, E2B_SANDBOX_URL and an API key are all they are given
(docs/e2b.md).

By default they start a real `sandpod serve --e2b-listen` with a token file
(the API key is that token). With SANDPOD_E2B_URL set they run against that
E2B front door instead (hack/testbed/e2e.sh: the bridge on the node bed):
SANDPOD_E2B_API_KEY is the key, SANDPOD_E2B_TEMPLATE, when set, the
template every test creates its sandboxes from, and SANDPOD_E2B_RUNTIME its
runtime (runc, the default, or gvisor): the bed runs the tests once with a
runc template and once with a gVisor one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from integration.conftest import (  # noqa: F401 - sandpod_bin is a fixture
    Server,
    free_port,
    python_pool,
    sandpod_bin,
)

API_KEY = "e2b-test-key-0123456789"

# The shared python template with a pool, without egress: nothing a test runs
# in a sandbox reaches beyond it.
CONFIG = python_pool(3).replace(
    "  autoResume: true\n", "  autoResume: true\n  networkPolicy: {egress: None}\n", 1
)

# The template the tests create sandboxes from: None is E2B's default, which
# sandpod maps to its default template ("python").
TEMPLATE = os.environ.get("SANDPOD_E2B_TEMPLATE") or None
# Its runtime: runc (the local engine's, and Kubernetes' default) or gvisor.
RUNTIME = os.environ.get("SANDPOD_E2B_RUNTIME") or "runc"


def _point_sdk_at(url: str, key: str) -> dict[str, str | None]:
    """Sets what a user of E2B's SDK sets to use sandpod; returns what was there."""
    saved = {k: os.environ.get(k) for k in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY")}
    os.environ.update(E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=key)
    return saved


def _restore(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def e2b_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The E2B front door's URL, with the SDK pointed at it."""
    url = os.environ.get("SANDPOD_E2B_URL")
    if url:
        key = os.environ.get("SANDPOD_E2B_API_KEY")
        if not key:
            raise pytest.UsageError("SANDPOD_E2B_URL is set without SANDPOD_E2B_API_KEY")
        saved = _point_sdk_at(url, key)
        yield url
        _restore(saved)
        return
    binary: Path = request.getfixturevalue("sandpod_bin")
    port = free_port()
    srv = Server(
        binary,
        tmp_path_factory.mktemp("e2b"),
        token=API_KEY,
        config=CONFIG,
        extra_args=["--e2b-listen", f"127.0.0.1:{port}"],
    )
    srv.start()
    url = f"http://127.0.0.1:{port}"
    saved = _point_sdk_at(url, API_KEY)
    yield url
    _restore(saved)
    srv.close()


@pytest.fixture
def sbx(e2b_server: str) -> Iterator[object]:
    """An E2B sandbox (e2b.Sandbox) on sandpod, killed after the test."""
    from e2b import Sandbox

    sb = Sandbox.create(TEMPLATE, timeout=600)
    yield sb
    sb.kill()
