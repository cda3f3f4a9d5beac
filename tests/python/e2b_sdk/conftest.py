"""Runs a real `sandpod serve --e2b-listen` for the E2B tests, which drive it
only through E2B's own SDKs (`e2b`, `e2b_code_interpreter`, pinned in
pyproject's dev extras) as their users do: E2B_API_URL, E2B_SANDBOX_URL and an
API key are all they are given (docs/e2b.md).

The server authenticates with a token file: the API key is that token.
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


@pytest.fixture(scope="session")
def e2b_server(
    sandpod_bin: Path,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Server]:
    port = free_port()
    srv = Server(
        sandpod_bin,
        tmp_path_factory.mktemp("e2b"),
        token=API_KEY,
        config=CONFIG,
        extra_args=["--e2b-listen", f"127.0.0.1:{port}"],
    )
    srv.e2b_url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    srv.start()
    saved = {k: os.environ.get(k) for k in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY")}
    # What a user of E2B's SDK sets to use sandpod.
    os.environ.update(
        E2B_API_URL=srv.e2b_url,  # type: ignore[attr-defined]
        E2B_SANDBOX_URL=srv.e2b_url,  # type: ignore[attr-defined]
        E2B_API_KEY=API_KEY,
    )
    yield srv
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    srv.close()


@pytest.fixture
def sbx(e2b_server: Server) -> Iterator[object]:
    """An E2B sandbox (e2b.Sandbox) on sandpod, killed after the test."""
    from e2b import Sandbox

    sb = Sandbox.create(timeout=600)
    yield sb
    sb.kill()
