"""An agent that dies is restarted by the local engine, and the client sees the count."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import sandpod

RESTART_TIMEOUT = 90.0  # generous: a loaded 2-core machine


def agent_pid(name: str) -> int:
    """The host PID of a sandbox's agent (its init's child, started as /proc/self/exe)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            len(args) > 3
            and args[0] == b"/proc/self/exe"
            and args[1] == b"agent"
            and b"\0--sandbox\0" + name.encode() + b"\0" in b"\0".join(args)
        ):
            return int(entry.name)
    raise AssertionError(f"no agent process found for sandbox {name}")


def test_killed_agent_is_restarted_and_counted(sandbox: sandpod.Sandbox) -> None:
    sandbox.files.write("kept.txt", "still here")
    assert sandbox.refresh().agent_restarts == 0

    os.kill(agent_pid(sandbox.name), signal.SIGKILL)

    end = time.monotonic() + RESTART_TIMEOUT
    while time.monotonic() < end:
        sandbox.refresh()
        if sandbox.status == sandpod.Phase.RUNNING and sandbox.agent_restarts >= 1:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"not restarted: {sandbox.info}")
    assert sandbox.agent_restarts == 1
    assert sandbox.info.agent_restarts == 1
    # The local engine restarts the agent; it never replaces a pod.
    assert sandbox.info.pod_restarts == 0
    assert sandbox.info.message.startswith("agent restarted 1 time; last: exited with code 137")
    ready = sandbox.info.condition("Ready")
    assert ready is not None and ready.message == sandbox.info.message
    assert sandbox.files.read_text("kept.txt") == "still here"
    assert sandbox.run("echo alive").stdout == "alive\n"


def _wait_status(sb: sandpod.Sandbox, want: sandpod.Phase) -> None:
    end = time.monotonic() + RESTART_TIMEOUT
    while time.monotonic() < end:
        if sb.refresh().status == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"not {want}: {sb.info}")


@pytest.mark.parametrize("method", ["claim", "create"])
def test_restart_on_failure_false_reports_the_crash(
    client: sandpod.Client, labels: dict[str, str], method: str
) -> None:
    """restart_on_failure=False overrides the engine's restart policy (Always here)."""
    with getattr(client, method)("python", labels=labels, restart_on_failure=False) as sb:
        os.kill(agent_pid(sb.name), signal.SIGKILL)
        _wait_status(sb, sandpod.Phase.FAILED)
        assert sb.agent_restarts == 0
