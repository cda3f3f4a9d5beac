"""Snapshots, forks and restores over the real binary and the real client."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

import sandpod

from .conftest import PYTHON_TEMPLATE, Server, make_client

POOL_SNAPSHOT = "pool-seed"

CONFIG = f"""{PYTHON_TEMPLATE}---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: forked
spec:
  templateRef:
    name: python
  replicas: 2
  snapshot: {POOL_SNAPSHOT}
---
apiVersion: sandpod.dev/v1alpha1
kind: LocalEngineConfig
snapshots:
  maxPerNamespace: 20
  maxBytes: 67108864
"""


@pytest.fixture(scope="module")
def snap_server(sandpod_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(sandpod_bin, tmp_path_factory.mktemp("snapshots"), config=CONFIG)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture
def sc(snap_server: Server) -> Iterator[sandpod.Client]:
    with make_client(snap_server) as c:
        yield c


@pytest.fixture
def source(sc: sandpod.Client, labels: dict[str, str]) -> Iterator[sandpod.Sandbox]:
    with sc.create("python", labels=labels) as sb:
        sb.run(
            "mkdir -p data && echo seed > data/a.txt && head -c 100000 /dev/urandom > blob",
            check=True,
        )
        yield sb


def host_runs(cmdline: str) -> bool:
    """Whether a process with this command line runs on the host."""
    want = cmdline.replace(" ", "\0").encode() + b"\0"
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "cmdline").read_bytes() == want:
                return True
        except OSError:
            continue
    return False


def read(sb: sandpod.Sandbox, path: str) -> str:
    return sb.run(f"cat {path} 2>/dev/null || echo MISSING").stdout.strip()


def test_fork_eight_isolated(
    sc: sandpod.Client, source: sandpod.Sandbox, labels: dict[str, str]
) -> None:
    snap = source.snapshot(labels=labels)
    assert snap.info.size_bytes >= 100_005
    assert snap.info.memory is False
    assert snap.info.volumes == ("workspace",)
    assert snap.info.storage in ("overlayfs", "copy")
    assert snap.info.source_sandbox == source.name
    assert [s.name for s in sc.snapshots(labels=labels)] == [snap.name]
    blob = source.run("sha256sum blob").stdout.split()[0]
    with sc.fork(snap, 8, labels=labels) as forks:
        assert len(forks) == 8
        assert len({f.name for f in forks}) == 8
        assert forks.snapshot.name == snap.name
        for i, f in enumerate(forks):
            assert f.info.snapshot == snap.name
            assert read(f, "data/a.txt") == "seed"
            assert f.run("sha256sum blob").stdout.split()[0] == blob
            # Owned by the sandbox's user inside, writable.
            assert f.run("stat -c %u:%g data/a.txt").stdout.strip() == "1000:1000"
            f.run(f"echo fork{i} > data/a.txt && echo {i} > mine", check=True)
        for i, f in enumerate(forks):
            assert read(f, "data/a.txt") == f"fork{i}"
            assert read(f, "mine") == str(i)
        assert read(source, "data/a.txt") == "seed"
        assert read(source, "mine") == "MISSING"
        assert {"sandbox/" + f.name for f in forks} <= set(snap.refresh().info.used_by) or (
            snap.info.storage == "copy"
        )
    for f in forks:
        assert f.deleted
    snap.delete()
    with pytest.raises(sandpod.SnapshotNotFound):
        snap.refresh()


def test_restore_brings_files_back_and_keeps_name(
    snap_server: Server, sc: sandpod.Client, source: sandpod.Sandbox
) -> None:
    snap = source.snapshot(name=f"r-{source.name}"[:63])
    uid = source.info.uid
    source.run("echo changed > data/a.txt && rm blob && echo new > extra", check=True)
    marker = f"sleep {100000 + os.getpid() % 100000}.25"  # one this test alone runs
    bg = source.start(marker)
    restored = source.restore(snap)
    assert restored.name == source.name and restored.info.uid == uid
    assert restored.status == sandpod.Phase.RUNNING
    assert restored.info.snapshot == snap.name
    assert read(source, "data/a.txt") == "seed"
    assert read(source, "extra") == "MISSING"
    assert source.run("test -f blob").exit_code == 0
    # Its processes were stopped: the sleep is gone.
    assert source.run("pgrep -x sleep || echo none").stdout.strip() == "none"
    # ... on the host too: the old process tree dies in the background.
    deadline = time.monotonic() + 60
    while host_runs(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not host_runs(marker)
    # The old workspace was set aside for the restore and is removed once
    # its processes are gone: nothing of it stays on the host.
    trash = snap_server.state_dir / "sandboxes" / source.namespace / source.name / "trash"
    deadline = time.monotonic() + 60
    while trash.exists() and any(trash.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not trash.exists() or not any(trash.iterdir())
    del bg
    source.delete()
    snap.delete()


def test_fork_from_a_sandbox_and_retry_makes_no_extra(
    sc: sandpod.Client, source: sandpod.Sandbox, labels: dict[str, str]
) -> None:
    rid = "fork-" + labels["test"]
    first = sc.fork(source, 3, labels=labels, request_id=rid)
    again = sc.fork(source, 3, labels=labels, request_id=rid)
    assert [f.name for f in again] == [f.name for f in first]
    assert again.snapshot.name == first.snapshot.name
    assert first.snapshot.info.source_sandbox == source.name
    assert len(sc.list(labels=labels)) == 1 + 3
    assert read(first[2], "data/a.txt") == "seed"
    first.delete_all()
    first.snapshot.delete()


def test_snapshot_survives_restart_and_so_do_forks(
    snap_server: Server, sc: sandpod.Client, source: sandpod.Sandbox, labels: dict[str, str]
) -> None:
    snap = source.snapshot(labels=labels)
    forks = sc.fork(snap, 2, labels=labels, on_exit="delete")
    forks[0].run("echo before-restart > data/a.txt", check=True)
    snap_server.restart()
    assert sc.get_snapshot(snap.name).info.size_bytes == snap.info.size_bytes
    assert read(forks[0], "data/a.txt") == "before-restart"
    assert read(forks[1], "data/a.txt") == "seed"
    # A fork made after the restart still gets the files.
    with sc.fork(snap, 1, labels=labels) as more:
        assert read(more[0], "data/a.txt") == "seed"
    with pytest.raises(sandpod.SnapshotInUse):
        snap.delete()
    forks.delete_all()
    snap.delete()


def test_pool_of_forks_and_delete_refused_while_named(
    sc: sandpod.Client, source: sandpod.Sandbox
) -> None:
    snap = source.snapshot(name=POOL_SNAPSHOT)
    try:
        deadline = time.monotonic() + 120
        while sc.pool("forked").ready_replicas < 1:
            assert time.monotonic() < deadline, "the pool of forks never got a ready member"
            time.sleep(0.5)
        with sc.claim("python", snapshot=snap) as sb:
            assert sb.warm is True
            assert sb.info.pool == "forked"
            assert read(sb, "data/a.txt") == "seed"
        # A fork of the snapshot takes ready pool members first.
        deadline = time.monotonic() + 120
        while sc.pool("forked").ready_replicas < 2:
            assert time.monotonic() < deadline, "the pool of forks never refilled"
            time.sleep(0.5)
        with sc.fork(snap, 3) as forks:
            assert sorted(f.info.pool for f in forks) == ["", "forked", "forked"]
            assert all(read(f, "data/a.txt") == "seed" for f in forks)
        # A plain claim never gets a member made from a snapshot.
        with sc.claim("python") as plain:
            assert plain.info.pool != "forked"
            assert read(plain, "data/a.txt") == "MISSING"
        with pytest.raises(sandpod.SnapshotInUse) as exc:
            snap.delete()
        assert "pool/forked" in exc.value.message
        assert exc.value.code == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        sc.scale_pool("forked", 0)


def test_hostile_workspace_does_not_leak_host_files(
    snap_server: Server, sc: sandpod.Client, source: sandpod.Sandbox, labels: dict[str, str]
) -> None:
    source.run(
        "ln -s /etc/shadow shadow && ln -s / hostroot && mkfifo fifo && "
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind(\"sock\")'",
        check=True,
    )
    snap = source.snapshot(labels=labels)
    assert any("fifo" in s for s in snap.info.skipped)
    assert any("sock" in s for s in snap.info.skipped)
    files = snap_server.state_dir / "snapshots" / "default" / snap.name / "files"
    assert os.readlink(files / "shadow") == "/etc/shadow"  # the link, not the host's file
    assert not (files / "fifo").exists()
    # The snapshot's files belong to no sandbox's range, and no other user may enter.
    assert (snap_server.state_dir / "snapshots").stat().st_mode & 0o077 == 0
    with sc.fork(snap, 1, labels=labels) as forks:
        out = forks[0].run("cat shadow; ls hostroot/root 2>&1; stat -c %u data/a.txt").stdout
        assert "root:" not in out  # /etc/shadow of the host never shows
        assert out.strip().endswith("1000")
    snap.delete()


def test_bad_inputs_have_codes(sc: sandpod.Client, source: sandpod.Sandbox) -> None:
    with pytest.raises(sandpod.InvalidArgument, match="count"):
        sc.fork("some-snap", 257)
    with pytest.raises(ValueError):
        sc.fork("some-snap", 0)
    with pytest.raises(sandpod.InvalidArgument, match="name"):
        source.snapshot(name="Not_A_Name")
    with pytest.raises(sandpod.InvalidArgument, match="labels"):
        source.snapshot(labels={"sandpod.dev/x": "y"})
    with pytest.raises(sandpod.SnapshotNotFound):
        sc.fork("no-such-snapshot", 1)
    with pytest.raises(sandpod.SnapshotNotFound):
        source.restore("no-such-snapshot")
    with pytest.raises(sandpod.SnapshotNotFound):
        sc.claim("python", snapshot="no-such-snapshot")
    with pytest.raises(sandpod.SandboxNotFound):
        sc.fork(sc.get(source.name), 1, namespace="other")
    snap = source.snapshot()
    with pytest.raises(sandpod.AlreadyExists):
        source.snapshot(name=snap.name)
    snap.delete()


def test_snapshot_quota(sc: sandpod.Client, source: sandpod.Sandbox) -> None:
    # maxBytes is 64 MiB in this server's LocalEngineConfig.
    source.run("head -c 70000000 /dev/zero > big", check=True)
    with pytest.raises(sandpod.ResourceExhausted, match="maxBytes"):
        source.snapshot()
    assert not [s for s in sc.snapshots() if s.info.source_sandbox == source.name]


def test_async_client_snapshot_fork_restore(snap_server: Server, labels: dict[str, str]) -> None:
    async def main() -> None:
        async with (
            sandpod.AsyncClient(snap_server.address, progress=False, timeout=120) as client,
            await client.create("python", labels=labels) as sb,
        ):
            await sb.run("echo async-seed > s.txt", check=True)
            snap = await sb.snapshot(labels=labels)
            assert [s.name for s in await client.snapshots(labels=labels)] == [snap.name]
            async with await client.fork(snap, 2, labels=labels) as forks:
                assert isinstance(forks, sandpod.AsyncForkList)
                outs = [(await f.run("cat s.txt")).stdout.strip() for f in forks]
                assert outs == ["async-seed", "async-seed"]
                await forks[0].run("echo changed > s.txt", check=True)
                await forks[0].restore(snap)
                assert (await forks[0].run("cat s.txt")).stdout.strip() == "async-seed"
            claimed = await client.claim("python", snapshot=snap, labels=labels)
            assert (await claimed.run("cat s.txt")).stdout.strip() == "async-seed"
            await claimed.delete()
            # Nothing uses it any more (the source is not made from it).
            await snap.delete()
            with pytest.raises(sandpod.SnapshotNotFound):
                await client.get_snapshot(snap.name)

    asyncio.run(main())
