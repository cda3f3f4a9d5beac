"""One `sandpod serve` for the notebook and magic tests, purged at the end."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from integration.conftest import Server, python_pool, sandpod_binary

# A pool of 4 covers the quick start warm, and the 4 sandboxes of rl_rollouts' cold
# baseline (its forks are made from its snapshot, not from the pool); small, which
# keeps the pool's refill from competing with the notebooks for the CPUs.
CONFIG = python_pool(4)


@pytest.fixture(scope="session")
def nb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("sandpod-nb")
    binary = workdir / "sandpod"  # a private copy, safe from a rebuild during the run
    shutil.copy2(sandpod_binary(), binary)
    srv = Server(binary, workdir, config=CONFIG)
    srv.start()
    try:
        yield srv
    finally:
        srv.close()
