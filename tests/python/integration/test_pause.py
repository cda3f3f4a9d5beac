"""Pause and resume: processes frozen with their memory, thawed where they stopped."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import sandpod

# A process that keeps a value in its memory, counts from it, and writes each count to
# the file "count" (atomically) and its PID to "pid". setsid: it outlives the exec.
COUNTER = """setsid python3 -c '
import os, secrets, time
open("pid", "w").write(str(os.getpid()))
secret = secrets.token_hex(8)
open("secret", "w").write(secret)
i = 0
while True:
    i += 1
    open("count.tmp", "w").write(str(i) + " " + secret)
    os.replace("count.tmp", "count")
    time.sleep(0.02)
' >/dev/null 2>&1 </dev/null &"""


def host_count(server, sb) -> tuple[int, str]:
    """The counter's file read from the host (the agent is frozen while paused)."""
    path = Path(server.state_dir) / "sandboxes" / sb.namespace / sb.name / "work" / "count"
    try:
        n, secret = path.read_text().split()
    except (OSError, ValueError):
        return 0, ""
    return int(n), secret


def wait_for(what: str, cond, timeout: float = 90.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def start_counter(server, sb) -> tuple[str, str]:
    sb.run(COUNTER, check=True)
    wait_for("the counter", lambda: host_count(server, sb)[0] > 5)
    return sb.files.read_text("pid"), sb.files.read_text("secret")


def assert_frozen(server, sb) -> int:
    """The counter does not move for a second (it moves 50 times a second when it runs)."""
    before = host_count(server, sb)
    time.sleep(1.0)
    assert host_count(server, sb) == before, "a paused process kept running"
    return before[0]


def test_pause_keeps_memory_and_resume_continues(server, client, labels):
    with client.create("cold", labels=labels) as sb:
        pid, secret = start_counter(server, sb)
        assert sb.pause() is sb
        assert sb.status is sandpod.Phase.PAUSED
        assert sb.refresh().status is sandpod.Phase.PAUSED
        assert any(c.type == "Paused" and c.status == "True" for c in sb.info.conditions)
        frozen_at = assert_frozen(server, sb)

        # Exec and files on a paused sandbox whose template does not auto-resume.
        with pytest.raises(sandpod.FailedPrecondition) as err:
            sb.run("true")
        assert err.value.reason == "SANDBOX_PAUSED"
        assert "resume it first" in err.value.message
        with pytest.raises(sandpod.FailedPrecondition):
            sb.files.read_text("count")
        assert sb.pause().status is sandpod.Phase.PAUSED  # pausing again changes nothing

        sb.resume()
        assert sb.status is sandpod.Phase.RUNNING
        wait_for("the counter to continue", lambda: host_count(server, sb)[0] > frozen_at)
        count, kept = host_count(server, sb)
        assert count > frozen_at, "the counter restarted instead of continuing"
        assert kept == secret, "the process lost the value in its memory"
        assert sb.files.read_text("pid") == pid
        assert sb.run(f"kill -0 {pid} && echo alive").stdout == "alive\n"
        assert sb.refresh().agent_restarts == 0


def test_pause_auto_resumes_on_exec(server, sandbox):
    start_counter(server, sandbox)
    sandbox.pause()
    frozen_at = assert_frozen(server, sandbox)
    assert sandbox.run("echo back").stdout == "back\n"  # the python template auto-resumes
    assert sandbox.refresh().status is sandpod.Phase.RUNNING
    wait_for("the counter to continue", lambda: host_count(server, sandbox)[0] > frozen_at)


def test_suspend_and_delete_a_paused_sandbox(client, labels):
    with client.create("cold", labels=labels) as sb:
        sb.files.write("kept.txt", "kept")
        sb.pause()
        sb.suspend()
        assert sb.status is sandpod.Phase.SUSPENDED
        with pytest.raises(sandpod.FailedPrecondition):
            sb.pause()  # a suspended sandbox has no processes to pause
        sb.resume()
        assert sb.files.read_text("kept.txt") == "kept"
        sb.pause()
        sb.delete()
        assert sb.deleted


def test_pause_of_a_pool_member_is_refused(client):
    members = [m for m in client.list(include_pool_members=True) if not m.info.claimed]
    assert members, "the session's pool has members"
    with pytest.raises(sandpod.FailedPrecondition) as err:
        members[0].pause()
    assert err.value.reason == "UNCLAIMED_POOL_MEMBER"


def test_pause_survives_a_restart_of_serve(server, client, labels):
    with client.create("cold", labels=labels) as sb:
        _, secret = start_counter(server, sb)
        sb.pause()
        server.restart()
        assert sb.refresh().status is sandpod.Phase.PAUSED
        frozen_at = assert_frozen(server, sb)
        sb.resume()
        wait_for("the counter to continue", lambda: host_count(server, sb)[0] > frozen_at)
        assert host_count(server, sb)[1] == secret
        assert sb.refresh().agent_restarts == 0


def test_async_pause_and_resume(server, labels):
    async def main() -> None:
        async with sandpod.AsyncClient(server.address, timeout=120, progress=False) as client:
            sb = await client.create("cold", labels=labels)
            try:
                await sb.run(COUNTER, check=True)
                await asyncio.to_thread(
                    wait_for, "the counter", lambda: host_count(server, sb)[0] > 5
                )
                await sb.pause()
                assert sb.status is sandpod.Phase.PAUSED
                frozen_at = await asyncio.to_thread(assert_frozen, server, sb)
                await sb.resume()
                assert sb.status is sandpod.Phase.RUNNING
                await asyncio.to_thread(
                    wait_for,
                    "the counter to continue",
                    lambda: host_count(server, sb)[0] > frozen_at,
                )
            finally:
                await sb.delete()

    asyncio.run(main())
