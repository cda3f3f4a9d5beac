"""Every bad input gives its typed error, with the server's message."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest

import sandpod

from .conftest import Server, make_client


def test_unknown_template(client, labels):
    for call in (client.claim, client.create):
        with pytest.raises(sandpod.NotFound, match="nope") as info:
            call("nope", labels=labels)
        assert not isinstance(info.value, sandpod.SandboxNotFound)
        assert info.value.reason == "TEMPLATE_NOT_FOUND"


def test_missing_sandbox(client):
    with pytest.raises(sandpod.SandboxNotFound) as info:
        client.get("does-not-exist")
    assert info.value.message
    assert info.value.reason == "SANDBOX_NOT_FOUND"
    ghost = sandpod.Sandbox(client, sandpod.SandboxInfo(name="ghost", namespace="default"))
    with pytest.raises(sandpod.SandboxNotFound):
        ghost.run("true")
    with pytest.raises(sandpod.SandboxNotFound):
        ghost.files.read("x")
    with pytest.raises(sandpod.SandboxNotFound):
        ghost.delete()
    with pytest.raises(sandpod.SandboxNotFound):
        ghost.suspend()
    assert ghost.deleted and "status=Deleted" in repr(ghost)
    assert ghost.status is sandpod.Phase.DELETED


def test_sandbox_not_found_means_the_sandbox(sandbox):
    """Code that claims a new sandbox on SandboxNotFound must not do so for a typo in a
    program's name, a missing working directory or a missing file."""
    for cmd in (["no-such-prog", "--flag"], "no-such-prog"):
        result = sandbox.run(cmd, stdin=b"x" * (1 << 20))  # stdin nobody reads is fine
        assert result.exit_code == 127, result
        assert "no-such-prog" in result.stderr and "not found" in result.stderr
    with pytest.raises(sandpod.CommandFailed) as failed:
        sandbox.run(["no-such-prog"], check=True)
    assert failed.value.exit_code == 127
    with pytest.raises(sandpod.FailedPrecondition, match="nowhere"):
        sandbox.run("true", cwd="nowhere")
    with pytest.raises(sandpod.FileNotFound):
        sandbox.files.read("no-such-file")
    assert sandbox.files.exists("no-such-file") is False
    assert not sandbox.deleted and sandbox.status is sandpod.Phase.RUNNING


async def _async_not_found(server: Server) -> None:
    client = sandpod.AsyncClient(server.address, token=server.token, timeout=120, progress=False)
    async with client, await client.claim("python") as sb:
        result = await sb.run(["no-such-prog"])
        assert result.exit_code == 127 and "not found" in result.stderr
        with pytest.raises(sandpod.FailedPrecondition):
            await sb.run("true", cwd="nowhere")
        with pytest.raises(sandpod.FileNotFound):
            await sb.files.stat("no-such-file")
        assert not sb.deleted
        other = await client.get(sb.name, on_exit="keep")
        await other.delete()  # through another handle: this one learns it from a call
        assert not sb.deleted
        with pytest.raises(sandpod.SandboxNotFound):
            await sb.run("true")
        assert sb.deleted and "status=Deleted" in repr(sb) and "Deleted" in sb._repr_html_()


def test_sandbox_not_found_means_the_sandbox_async(server):
    asyncio.run(_async_not_found(server))


def test_invalid_arguments(client, labels):
    with pytest.raises(sandpod.InvalidArgument) as info:
        client.create("python", name="Not_A_DNS_Label!", labels=labels)
    assert info.value.reason == "INVALID_NAME"
    with pytest.raises(sandpod.InvalidArgument) as info:
        client.list(labels="this is not a selector ===")
    assert info.value.reason == "INVALID_SELECTOR"
    with pytest.raises(sandpod.InvalidArgument) as info:
        client.claim("python", labels={"bad key!": "v"})
    assert info.value.reason == "INVALID_LABELS"
    past = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    with pytest.raises(sandpod.InvalidArgument) as info:
        client.claim("python", shutdown_time=past, labels=labels)
    assert info.value.reason == "INVALID_LIFETIME"
    assert client.list(labels=labels) == []


def test_client_side_validation(client):
    with pytest.raises(ValueError):
        client.claim("python", ttl=-5)
    with pytest.raises(ValueError):
        client.claim("python", shutdown_time=dt.datetime.now())  # naive
    with pytest.raises(TypeError):
        client.claim("python", ttl="1h")  # type: ignore[arg-type]


def test_duplicate_name(client, labels):
    name = f"dup-{labels['test']}"
    with (
        client.create("python", name=name, labels=labels),
        pytest.raises(sandpod.AlreadyExists) as info,
    ):
        client.create("python", name=name, labels=labels)
    assert info.value.reason == "SANDBOX_EXISTS"


def test_exec_on_suspended_without_auto_resume(client, labels):
    with client.create("cold", labels=labels) as sb:
        sb.suspend()
        with pytest.raises(sandpod.FailedPrecondition) as info:
            sb.run("true")
        assert info.value.reason == "SANDBOX_SUSPENDED"


def test_unreachable_server():
    from .conftest import free_port

    c = sandpod.Client(f"127.0.0.1:{free_port()}", timeout=2, progress=False)
    with c, pytest.raises((sandpod.Unavailable, sandpod.SandboxTimeout)):
        c.list()


def test_token_is_required_and_checked(sandpod_bin, tmp_path):
    srv = Server(sandpod_bin, tmp_path, token="s3cret-token")
    srv.start()
    try:
        for token in ("wrong", ""):
            c = sandpod.Client(srv.address, token=token, timeout=30, progress=False)
            with c, pytest.raises(sandpod.Unauthenticated) as info:
                c.list()
            assert info.value.reason == "INVALID_TOKEN"
        with make_client(srv) as c:
            assert isinstance(c.list(), list)
            with c.claim("python") as sb:
                assert sb.run("echo ok").stdout == "ok\n"
    finally:
        srv.close()


def test_unclaimed_pool_member_cannot_be_used(client):
    """A warm pool member seen in a list is nobody's yet: it refuses commands, files and
    suspend, so nothing can be planted for whoever claims it next."""

    def unclaimed() -> list[sandpod.Sandbox]:
        return [m for m in client.list(include_pool_members=True) if not m.info.claimed]

    deadline = time.monotonic() + 60
    while not (members := unclaimed()):
        assert time.monotonic() < deadline, "the session's warm pool shows no member"
        time.sleep(0.2)
    member = client.get(members[0].name, on_exit="keep")
    assert member.info.pool == "python" and not member.info.claimed

    with pytest.raises(sandpod.FailedPrecondition, match="unclaimed member of warm pool") as info:
        member.run("echo planted > planted.txt")
    assert info.value.reason == "UNCLAIMED_POOL_MEMBER"
    assert "ClaimSandbox with template" in info.value.message
    with pytest.raises(sandpod.FailedPrecondition, match="unclaimed member"):
        member.files.write("planted.txt", "planted")
    with pytest.raises(sandpod.FailedPrecondition, match="unclaimed member"):
        member.files.read("planted.txt")
    with pytest.raises(sandpod.FailedPrecondition, match="unclaimed member"):
        member.suspend()
    # Refused means untouched: not suspended, and still nobody's.
    after = client.get(member.name, on_exit="keep").info
    assert after.phase != sandpod.Phase.SUSPENDED and not after.claimed
