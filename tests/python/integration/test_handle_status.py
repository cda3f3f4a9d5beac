"""What a handle shows is the server's state: a call that auto-resumed a paused or
suspended sandbox leaves the handle's ``status`` equal to what ``client.get`` says."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import sandpod

# Each call reaches the sandbox's agent, which the server reaches only after it resumed
# the sandbox (the python template auto-resumes); an answer of the agent's own, such as a
# file not found, shows it as much as a success.


def read_missing(sb: sandpod.Sandbox) -> None:
    with pytest.raises(sandpod.FileNotFound):
        sb.files.read_text("missing.txt")


def watch_missing(sb: sandpod.Sandbox) -> None:
    with pytest.raises(sandpod.FileNotFound):
        sb.files.watch("missing-dir", timeout=1)


CALLS: dict[str, Callable[[sandpod.Sandbox], object]] = {
    "files.read_text": lambda sb: sb.files.read_text("note.txt"),
    "files.write": lambda sb: sb.files.write("other.txt", "x"),
    "files.list": lambda sb: sb.files.list("."),
    "files.exists": lambda sb: sb.files.exists("note.txt"),
    "files.exists (missing)": lambda sb: sb.files.exists("missing.txt"),
    "files.read_text (missing)": read_missing,
    "files.watch (missing)": watch_missing,
    "run": lambda sb: sb.run("true", check=True),
    "start": lambda sb: sb.start("true").wait(),
    "run_code": lambda sb: sb.run_code("1+1").raise_for_error(),
    "files.watch": lambda sb: sb.files.watch(".", timeout=1).close(),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_call_that_auto_resumes_a_paused_sandbox_updates_the_handle(client, sandbox, call):
    sandbox.files.write("note.txt", "kept")
    sandbox.pause()
    assert sandbox.status is sandpod.Phase.PAUSED
    assert client.get(sandbox.name).status is sandpod.Phase.PAUSED  # the server agrees

    CALLS[call](sandbox)

    server_says = client.get(sandbox.name).status
    assert server_says is sandpod.Phase.RUNNING
    assert sandbox.status is server_says, f"after {call} the handle says {sandbox.status}"
    assert not any(c.type == "Paused" and c.status == "True" for c in sandbox.info.conditions)


def test_a_file_read_that_auto_resumes_a_suspended_sandbox_updates_the_handle(client, sandbox):
    sandbox.files.write("note.txt", "kept")
    sandbox.suspend()
    assert sandbox.status is sandpod.Phase.SUSPENDED
    assert sandbox.files.read_text("note.txt") == "kept"
    assert sandbox.status is client.get(sandbox.name).status is sandpod.Phase.RUNNING


def test_a_handle_made_by_get_of_a_paused_sandbox(client, sandbox):
    sandbox.pause()
    other = client.get(sandbox.name)
    assert other.status is sandpod.Phase.PAUSED
    assert other.run("echo back").stdout == "back\n"
    assert other.status is client.get(sandbox.name).status is sandpod.Phase.RUNNING


def test_a_refusal_sets_the_phase_it_names(client, labels):
    # "cold" does not auto-resume: a paused sandbox refuses exec with SANDBOX_PAUSED.
    with client.create("cold", labels=labels) as sb:
        client.get(sb.name).pause()  # through another handle: sb still says Running
        assert sb.status is sandpod.Phase.RUNNING
        with pytest.raises(sandpod.FailedPrecondition) as err:
            sb.files.read_text("anything")
        assert err.value.reason == "SANDBOX_PAUSED"
        assert sb.status is client.get(sb.name).status is sandpod.Phase.PAUSED


def test_async_handle_after_an_auto_resume(server, labels):
    async def main() -> None:
        async with (
            sandpod.AsyncClient(
                server.address, token=server.token, timeout=120, progress=False
            ) as client,
            await client.claim("python", labels=labels) as sb,
        ):
            await sb.files.write("note.txt", "kept")
            await sb.pause()
            assert sb.status is sandpod.Phase.PAUSED
            assert await sb.files.read_text("note.txt") == "kept"
            server_says = (await client.get(sb.name)).status
            assert sb.status is server_says is sandpod.Phase.RUNNING

            await sb.pause()
            assert (await sb.run("echo back")).stdout == "back\n"
            assert sb.status is (await client.get(sb.name)).status is sandpod.Phase.RUNNING

            await sb.pause()  # the agent's own refusal shows the sandbox ran
            with pytest.raises(sandpod.FileNotFound):
                await sb.files.read_text("missing.txt")
            assert sb.status is (await client.get(sb.name)).status is sandpod.Phase.RUNNING

    asyncio.run(main())
