"""No stuck streams, on the real server: a kill behind stdin nobody reads, a directory of
40,000 entries, and RESOURCE_EXHAUSTED raised once (not retried)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest

import sandpod

from .conftest import Server, make_client

FORTY_THOUSAND = 40_000


@pytest.mark.parametrize("signal", [9, 15])
def test_signal_reaches_a_command_that_reads_no_stdin(sandbox, signal):
    proc = sandbox.start("sleep 1000")
    proc.write_stdin(b"y" * (64 << 20))  # never blocks; the server takes a window of it
    proc.send_signal(signal)
    result = proc.wait(timeout=120)
    assert result.signal == signal and result.exit_code == -1
    assert sandbox.run("echo still here").stdout == "still here\n"


def test_async_kill_reaches_a_command_that_reads_no_stdin(server: Server):
    async def main() -> None:
        async with (
            sandpod.AsyncClient(
                server.address, token=server.token, timeout=120, progress=False
            ) as client,
            await client.claim("python") as sb,
        ):
            proc = await sb.start("sleep 1000")
            await proc.write_stdin(b"y" * (64 << 20))
            await proc.kill()
            result = await proc.wait(timeout=120)
            assert result.signal == 9
            assert (await sb.run("echo still here")).stdout == "still here\n"

    asyncio.run(main())


def make_big_dir(sb: sandpod.Sandbox) -> None:
    sb.run(
        f"mkdir big && cd big && seq -f 'e%05g' 0 {FORTY_THOUSAND - 1} | xargs touch",
        check=True,
    )


def test_list_forty_thousand_entries(sandbox):
    make_big_dir(sandbox)
    entries = sandbox.files.list("big")
    assert [e.name for e in entries] == [f"e{i:05d}" for i in range(FORTY_THOUSAND)]
    assert entries[-1].path == f"big/e{FORTY_THOUSAND - 1:05d}"


def test_async_list_forty_thousand_entries(server: Server, sandbox):
    make_big_dir(sandbox)

    async def main() -> list[sandpod.FileInfo]:
        async with sandpod.AsyncClient(
            server.address, token=server.token, timeout=120, progress=False
        ) as client:
            sb = await client.get(sandbox.name, on_exit="keep")
            return await sb.files.list("big/")

    entries = asyncio.run(main())
    assert len(entries) == FORTY_THOUSAND
    assert entries[0].name == "e00000" and entries[-1].name == f"e{FORTY_THOUSAND - 1:05d}"


class CountingStub:
    """Counts the calls of each method of a client's stub, passing them on."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.calls: dict[str, int] = {}

    def __getattr__(self, method: str) -> Callable[..., Any]:
        real = getattr(self._stub, method)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[method] = self.calls.get(method, 0) + 1
            return real(*args, **kwargs)

        return call


def test_too_large_write_message_is_resource_exhausted_once(server: Server, labels):
    with make_client(server) as client, client.claim("python", labels=labels) as sb:
        counting = CountingStub(client._stub)
        client._stub = counting
        # One 9 MiB chunk from an iterable goes as one message: over the 8 MiB limit.
        with pytest.raises(sandpod.ResourceExhausted, match="larger than max"):
            sb.files.write("huge.bin", [b"x" * (9 << 20)])
        assert counting.calls["WriteFile"] == 1
        assert not sb.files.exists("huge.bin")


def test_resource_exhausted_file_call_is_not_retried(server: Server, labels):
    # A page over this client's receive limit (4 KiB here): how a directory listed in
    # one message fails against gRPC's default limit of 4 MiB.
    options = [("grpc.max_receive_message_length", 4 << 10)]
    client = make_client(server, channel_options=options)
    with client, client.claim("python", labels=labels) as sb:
        sb.run("mkdir many && cd many && seq 1 500 | xargs touch", check=True)
        counting = CountingStub(client._stub)
        client._stub = counting
        with pytest.raises(sandpod.ResourceExhausted) as err:
            sb.files.list("many")
        assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert counting.calls["ListFiles"] == 1
