"""Sandbox lifecycle through E2B's SDK: create, connect, info, list, timeout,
pause/resume, kill, and the answers for what sandpod does not have."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path

import pytest
from e2b import (
    AsyncSandbox,
    AuthenticationException,
    NotFoundException,
    Sandbox,
    SandboxException,
    SandboxQuery,
)

from .conftest import RUNTIME, TEMPLATE


def test_create_info_list_timeout_kill(e2b_server) -> None:
    tag = uuid.uuid4().hex[:10]
    sb = Sandbox.create(
        TEMPLATE, metadata={"suite": "e2b", "tag": tag}, envs={"GREETING": "hi"}, timeout=300
    )
    try:
        assert sb.commands.run("echo $GREETING").stdout == "hi\n"
        info = sb.get_info()
        assert info.sandbox_id == sb.sandbox_id
        # E2B's default "base" is sandpod's default template
        assert info.template_id == (TEMPLATE or "python")
        assert info.metadata == {"suite": "e2b", "tag": tag}
        assert info.state.value == "running"
        left = info.end_at - datetime.datetime.now(datetime.timezone.utc)
        assert datetime.timedelta(seconds=200) < left <= datetime.timedelta(seconds=301)

        sb.set_timeout(3600)
        left = sb.get_info().end_at - datetime.datetime.now(datetime.timezone.utc)
        assert left > datetime.timedelta(seconds=3000)

        found = Sandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items()
        assert [s.sandbox_id for s in found] == [sb.sandbox_id]
        assert Sandbox.list(query=SandboxQuery(metadata={"tag": "other"})).next_items() == []

        same = Sandbox.connect(sb.sandbox_id)
        assert same.commands.run("echo connected").stdout == "connected\n"
    finally:
        sb.kill()
    assert not Sandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items()
    with pytest.raises(NotFoundException):
        Sandbox.get_info(sb.sandbox_id)
    assert Sandbox.kill(sb.sandbox_id) is False  # already gone


def test_wrong_api_key_is_refused(e2b_server) -> None:
    with pytest.raises(AuthenticationException):
        Sandbox.create(TEMPLATE, api_key="not-the-key")


def test_unknown_template_names_it(e2b_server) -> None:
    with pytest.raises(SandboxException, match="no-such-template"):
        Sandbox.create("no-such-template")


def test_pause_and_resume_keep_files(sbx) -> None:
    sbx.files.write("kept.txt", "still here")
    assert sbx.pause() is True
    assert Sandbox.get_info(sbx.sandbox_id).state.value == "paused"
    resumed = Sandbox.connect(sbx.sandbox_id)
    assert resumed.get_info().state.value == "running"
    assert resumed.files.read("kept.txt") == "still here"


def test_metrics_are_answered_not_supported(sbx) -> None:
    with pytest.raises(SandboxException, match=r"metrics.*not supported by sandpod"):
        sbx.get_metrics()


def test_async_create_connect_kill(e2b_server) -> None:
    async def main() -> None:
        tag = uuid.uuid4().hex[:10]
        sb = await AsyncSandbox.create(TEMPLATE, metadata={"tag": tag})
        try:
            assert (await sb.commands.run("echo async")).stdout == "async\n"
            assert await sb.is_running()
            other = await AsyncSandbox.connect(sb.sandbox_id)
            assert (await other.get_info()).metadata == {"tag": tag}
            await sb.set_timeout(120)
            listed = await AsyncSandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items()
            assert [s.sandbox_id for s in listed] == [sb.sandbox_id]
        finally:
            await sb.kill()
        assert not await sb.is_running()

    asyncio.run(main())


def test_runs_under_the_templates_runtime(sbx) -> None:
    # SANDPOD_E2B_RUNTIME names the template's runtime (the node bed runs the
    # tests on the same host as the test): gVisor has a kernel of its own,
    # runc and the local engine share the host's.
    version = sbx.commands.run("cat /proc/version").stdout.strip()
    host = Path("/proc/version").read_text().strip()
    if RUNTIME == "gvisor":
        assert version != host
        assert "Starting gVisor" in sbx.commands.run("dmesg").stdout
    else:
        assert RUNTIME == "runc", f"SANDPOD_E2B_RUNTIME={RUNTIME!r}: want runc or gvisor"
        assert version == host
