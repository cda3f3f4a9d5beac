"""A client pointed at a server that is not running fails within seconds, naming the
address; once it has reached its server, a restart is ridden out by retries."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import sandpod

from .conftest import Server, free_port, make_client

# Generous: the rule is "seconds, not a whole timeout (60 s) of retries", not a tight
# timing.
WELL_UNDER_A_MINUTE = 30.0


def closed_address() -> str:
    return f"127.0.0.1:{free_port()}"  # bound, then released: nothing listens


def assert_no_server(err: sandpod.SandpodError, address: str) -> None:
    assert type(err) is sandpod.Unavailable
    assert f"no sandpod server at {address}" in str(err)
    assert "make run" in str(err)
    assert "refused" in str(err).lower()  # gRPC's reason comes along


def ghost(client: sandpod.Client) -> sandpod.Sandbox:
    return sandpod.Sandbox(client, sandpod.SandboxInfo(name="x", namespace="default"))


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.get("x"),
        lambda c: c.claim("python"),
        lambda c: c.list(),
        lambda c: c.watch(),
        lambda c: ghost(c).run("true"),
        lambda c: ghost(c).files.read("f"),
        lambda c: ghost(c).files.write("f", "x"),
    ],
    ids=["get", "claim", "list", "watch", "run", "files.read", "files.write"],
)
def test_no_server_fails_fast_naming_the_address(call):
    address = closed_address()
    began = time.monotonic()
    # A client that retried a refused connection would go on until its default
    # timeout (60 s); it must give up at once, naming the address.
    with (
        sandpod.Client(address, progress=False) as client,
        pytest.raises(sandpod.Unavailable) as info,
    ):
        call(client)
    assert time.monotonic() - began < WELL_UNDER_A_MINUTE
    assert_no_server(info.value, address)


def test_no_server_fails_fast_asyncio():
    address = closed_address()

    async def main() -> list[sandpod.SandpodError]:
        errors: list[sandpod.SandpodError] = []
        async with sandpod.AsyncClient(address, progress=False) as client:
            info = sandpod.SandboxInfo(name="x", namespace="default")
            handle = sandpod.AsyncSandbox(client, info)
            for call in (client.get("x"), client.claim("python"), handle.run("true")):
                try:
                    await call
                except sandpod.SandpodError as err:
                    errors.append(err)
            try:
                async for _ in client.watch():
                    break
            except sandpod.SandpodError as err:
                errors.append(err)
        return errors

    began = time.monotonic()
    errors = asyncio.run(main())
    assert time.monotonic() - began < WELL_UNDER_A_MINUTE
    assert len(errors) == 4
    for err in errors:
        assert_no_server(err, address)


def test_connect_timeout_none_waits_like_any_call():
    address = closed_address()
    client = sandpod.Client(address, progress=False, timeout=1.0, connect_timeout=None)
    with client, pytest.raises(sandpod.SandpodError) as info:
        client.get("x")
    assert "no sandpod server" not in str(info.value)


def test_a_connected_client_rides_out_a_restart(server: Server, labels):
    """Down for longer than the first-connection wait: a client that had reached the
    server retries until the server is back, within the call's own deadline."""
    with make_client(server) as client:
        sb = client.claim("python", labels=labels)
        downtime = 2 * sandpod.Client.__init__.__kwdefaults__["connect_timeout"]
        bounce = threading.Thread(target=server.restart, kwargs={"downtime": downtime})
        bounce.start()
        try:
            time.sleep(0.5)  # the server is stopping or down
            assert client.get(sb.name).name == sb.name
            assert sb.run("echo back").stdout == "back\n"
        finally:
            bounce.join()
        sb.delete()
