"""Terminals on the real server with the real client: a real shell on a pseudo-terminal
of the sandbox, its size and resizes, line editing, Ctrl-C and the exit code."""

from __future__ import annotations

import asyncio
import re
import time

import grpc
import pytest

import sandpod
from sandpod._errors import from_rpc_error
from sandpod.v1 import exec_pb2

from .conftest import Server

LONG = 90.0  # generous: a loaded 2-core machine


def test_shell_size_resize_line_editing_ctrl_c_and_exit_code(sandbox):
    with sandbox.terminal(["/bin/sh", "-i"], rows=24, cols=80) as t:
        t.send("stty size\r")
        t.expect("24 80", timeout=LONG)
        t.resize(40, 120)
        t.send("stty size\r")
        t.expect("40 120", timeout=LONG)
        # Typed "echo abc", a backspace, then "d": the terminal makes it "echo abd".
        t.send("echo abc\x7fd\r")
        t.expect("abd\r\n", timeout=LONG)
        # The job prints once it is in the foreground, then becomes the sleep: the
        # shell reads the next line only after the sleep ended, long after LONG unless
        # Ctrl-C interrupted it.
        t.send("sh -c 'echo sleep''ing; exec sleep 100'\r")
        t.expect("sleeping\r\n", timeout=LONG)
        t.send("\x03")
        # The shell's prompt first: a shell taking the terminal back may drop
        # what was typed before it.
        t.expect("$ ", timeout=LONG)
        t.send("echo alive-$((40+2))\r")
        t.expect(re.compile(r"alive-\d+"), timeout=LONG)
        t.send("exit 3\r")
        assert t.wait(timeout=LONG) == 3
        assert t.exit_code == 3 and not t.running


def test_default_shell_and_output_as_it_comes(sandbox):
    t = sandbox.terminal(rows=10, cols=50, env={"GREETING": "hi"})
    try:
        t.send("echo $GREETING-$TERM; tty\r")
        text = t.expect(re.compile(rb"/dev/pts/\d+"), timeout=LONG)
        assert "hi-xterm-256color" in text
        t.send("exit\r")
        rest = b"".join(t)  # iteration hands out what is left, until the end
        assert isinstance(rest, bytes)
        assert t.wait(timeout=LONG) == 0
    finally:
        t.close()


def test_close_ends_the_terminal_and_its_jobs(sandbox):
    t = sandbox.terminal(["/bin/sh", "-i"])
    t.send("sleep 1001 &\r")
    t.send("echo started\r")
    t.expect("started\r\n", timeout=LONG)
    t.close()
    assert not t.running
    # Its own close is no error (the call ended CANCELLED): only not an exit.
    with pytest.raises(sandpod.ServerError, match="closed before it ended"):
        t.wait(timeout=LONG)
    count = (
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f; echo; done | grep -c '^sleep 1001 $'"
    )
    for _ in range(int(LONG * 10)):
        if sandbox.run(count).stdout.strip() == "0":
            break
        time.sleep(0.1)
    else:
        pytest.fail("the background job of a closed terminal still runs")


def test_bad_sizes_are_refused_before_anything_runs(sandbox):
    with pytest.raises(ValueError, match="rows must be an int between 1 and 1000"):
        sandbox.terminal(rows=0)
    with pytest.raises(ValueError, match="cols"):
        sandbox.terminal(cols=1001)
    with sandbox.terminal(["sleep", "100"]) as t, pytest.raises(ValueError):
        t.resize(24, 0)


def test_resize_on_an_exec_without_a_terminal_is_failed_precondition(sandbox):
    # The clients' terminals always have one, so this goes through the raw stub: the
    # error a client of the API gets, as the Python client maps it.
    client = sandbox._client
    start = exec_pb2.ExecStart(sandbox=sandbox.name, namespace=sandbox.namespace, shell="sleep 100")
    requests = iter(
        [
            exec_pb2.ExecRequest(start=start),
            exec_pb2.ExecRequest(resize=exec_pb2.TerminalSize(rows=10, cols=10)),
        ]
    )
    call = client._stub.Exec(requests, timeout=LONG, metadata=client._metadata)
    with pytest.raises(grpc.RpcError) as info:
        for _ in call:
            pass
    err = from_rpc_error(info.value)
    assert isinstance(err, sandpod.FailedPrecondition)
    assert "has no terminal" in str(err)


def test_async_terminal(server: Server):
    async def main() -> None:
        async with (
            sandpod.AsyncClient(
                server.address, token=server.token, timeout=120, progress=False
            ) as client,
            await client.claim("python") as sb,
            await sb.terminal(["/bin/sh", "-i"], rows=30, cols=90) as t,
        ):
            await t.send("stty size\r")
            await t.expect("30 90", timeout=LONG)
            await t.resize(33, 99)
            await t.send(b"stty size\r")
            await t.expect("33 99", timeout=LONG)
            await t.send("echo abc\x7fd\r")
            await t.expect("abd\r\n", timeout=LONG)
            await t.send("exit 3\r")
            chunks = [c async for c in t]
            assert all(isinstance(c, bytes) for c in chunks)
            assert await t.wait(timeout=LONG) == 3

    asyncio.run(main())


def test_async_close_of_a_running_terminal_is_no_error(server: Server):
    # close() cancels the call: grpc.aio's read then raises CancelledError, which
    # the reader takes as the terminal's own close (no error kept, and its task
    # ends rather than being cancelled), as the sync reader takes CANCELLED.
    async def main() -> None:
        async with (
            sandpod.AsyncClient(
                server.address, token=server.token, timeout=120, progress=False
            ) as client,
            await client.claim("python") as sb,
        ):
            t = await sb.terminal(["/bin/sh", "-i"])
            await t.send("echo started\r")
            await t.expect("started\r\n", timeout=LONG)
            await t.close()
            assert not t.running
            assert not t._reader._task.cancelled()
            rest = [c async for c in t]  # ends, raising nothing
            assert all(isinstance(c, bytes) for c in rest)
            with pytest.raises(sandpod.ServerError, match="closed before it ended"):
                await t.wait(timeout=LONG)

    asyncio.run(main())
