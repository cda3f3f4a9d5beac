"""Quotas and leases over real gRPC against the real `sandpod serve`.

A sandbox claimed with a lease is reclaimed once its client stops renewing it: a client
process killed with SIGKILL loses its sandbox after the lease, a live one keeps it past
several leases, and a handle whose ``with`` block ended stops renewing. Over a
SandboxQuota, a claim is refused with RESOURCE_EXHAUSTED naming the limit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandpod

from .conftest import PYTHON_TEMPLATE, Server, make_client, python_pool

# Renewed every third of it: 6 s leaves a loaded 2-core machine 4 s to get a
# renewal through (3 s let a lease lapse under load, as in the Go tests).
LEASE = 6.0
# Generous: the engine's loop wakes at the expiry, but a loaded 2-core machine
# may take a while to delete a sandbox.
RECLAIM_DEADLINE = 90.0

REPO = Path(__file__).resolve().parents[3]

HOLDER = """
import sys, time
import sandpod
c = sandpod.Client(sys.argv[1], timeout=120, progress=False)
sb = c.claim("python", lease=float(sys.argv[2]), labels={"test": "lease-holder"})
print(sb.name, flush=True)
time.sleep(3600)
"""


def gone(client: sandpod.Client, name: str) -> bool:
    try:
        client.get(name)
    except sandpod.SandboxNotFound:
        return True
    return False


def wait_gone(client: sandpod.Client, name: str) -> float:
    start = time.monotonic()
    while not gone(client, name):
        assert time.monotonic() - start < RECLAIM_DEADLINE, f"{name} was not reclaimed"
        time.sleep(0.2)
    return time.monotonic() - start


def test_a_killed_client_loses_its_sandbox_after_the_lease(
    server: Server, client: sandpod.Client
) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "clients" / "python"))
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, server.address, str(LEASE)],
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stdout is not None
        name = proc.stdout.readline().decode().strip()
        assert name, "the holder printed no sandbox name"
        # While the holder lives, its renewals keep the sandbox past several leases.
        end = time.monotonic() + 3 * LEASE
        while time.monotonic() < end:
            assert client.get(name).status == sandpod.Phase.RUNNING
            time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        waited = wait_gone(client, name)
        assert waited < RECLAIM_DEADLINE
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def test_a_live_client_keeps_its_sandbox_and_leaving_the_block_stops_renewing(
    client: sandpod.Client, labels: dict[str, str]
) -> None:
    with client.claim("python", lease=LEASE, labels=labels, on_exit="keep") as sb:
        assert sb.info.lease == LEASE
        first = sb.info.lease_expire_time
        assert first is not None
        time.sleep(3 * LEASE)
        again = client.get(sb.name)
        assert again.status == sandpod.Phase.RUNNING
        assert again.info.lease_expire_time is not None and again.info.lease_expire_time > first
        assert sb.run("echo alive").stdout == "alive\n"
    # on_exit="keep": the sandbox stays, but nothing renews it any more.
    wait_gone(client, sb.name)


def test_async_client_renews_until_close(server: Server) -> None:
    async def main() -> str:
        async with sandpod.AsyncClient(server.address, timeout=120, progress=False) as ac:
            sb = await ac.claim("python", lease=LEASE, on_exit="keep")
            await asyncio.sleep(3 * LEASE)
            assert (await ac.get(sb.name)).status == sandpod.Phase.RUNNING
            return sb.name
        # the client closed: its renewer stopped

    name = asyncio.run(main())
    with make_client(server) as c:
        wait_gone(c, name)


def test_renew_lease_without_a_lease(sandbox: sandpod.Sandbox) -> None:
    with pytest.raises(sandpod.FailedPrecondition) as err:
        sandbox.renew_lease()
    assert err.value.reason == "NO_LEASE"


QUOTA_CONFIG = (
    python_pool(1)
    + "---\n"
    + PYTHON_TEMPLATE.replace("name: python", "name: other")
    + """---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxQuota
metadata:
  name: rl-team
spec:
  maxSandboxes: 1
  templates: [python]
"""
)


@pytest.fixture(scope="module")
def quota_server(sandpod_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(sandpod_bin, tmp_path_factory.mktemp("quota"), config=QUOTA_CONFIG)
    srv.start()
    yield srv
    srv.close()


def test_over_quota_claim_is_resource_exhausted_naming_the_limit(quota_server: Server) -> None:
    # One attempt: the clients otherwise wait out RESOURCE_EXHAUSTED on claims
    # (back-pressure) until their deadline.
    with make_client(quota_server, retry=sandpod.RetryPolicy(max_attempts=1)) as c:
        with c.claim("python") as held:
            with pytest.raises(sandpod.ResourceExhausted) as err:
                c.claim("python")
            assert err.value.reason == "SANDBOX_QUOTA_EXCEEDED"
            assert 'SandboxQuota "rl-team"' in err.value.message
            assert "maxSandboxes is 1 and 1 python sandboxes exist" in err.value.message
            with c.claim("other") as other:  # not covered by the quota
                assert other.status == sandpod.Phase.RUNNING
            assert held.status == sandpod.Phase.RUNNING
        with c.claim("python") as again:  # the first one was deleted: room again
            assert again.status == sandpod.Phase.RUNNING


def test_async_over_quota_claim(quota_server: Server) -> None:
    async def main() -> None:
        async with (
            sandpod.AsyncClient(
                quota_server.address,
                timeout=120,
                progress=False,
                retry=sandpod.RetryPolicy(max_attempts=1),
            ) as ac,
            await ac.claim("python"),
        ):
            with pytest.raises(sandpod.ResourceExhausted) as err:
                await ac.claim("python")
            assert err.value.reason == "SANDBOX_QUOTA_EXCEEDED"

    asyncio.run(main())
