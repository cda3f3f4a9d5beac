"""Snapshot requests and errors, without a server."""

import grpc
import pytest

import sandpod
from sandpod._errors import from_rpc_error
from sandpod._snapshots import SnapshotInfo, fork_request, snapshot_name
from sandpod.v1 import snapshot_pb2

from .conftest import FakeRpcError, with_reason


def fork(source, n=2):
    return fork_request(
        source,
        n,
        "default",
        template=None,
        ttl=30,
        shutdown_policy=None,
        labels={"a": "b"},
        env=None,
        request_id="r",
        wait=True,
    )


class FakeSandbox:
    name = "sb-1"
    files = object()


def test_fork_request_from_a_snapshot_name_handle_or_sandbox():
    by_name = fork("snap-1")
    assert (by_name.snapshot, by_name.sandbox, by_name.count) == ("snap-1", "", 2)
    assert by_name.ttl.seconds == 30 and by_name.request_id == "r" and not by_name.no_wait
    handle = sandpod.Snapshot(None, SnapshotInfo(name="snap-2", namespace="default"))  # type: ignore[arg-type]
    assert fork(handle).snapshot == "snap-2"
    from_sb = fork(FakeSandbox())
    assert (from_sb.snapshot, from_sb.sandbox) == ("", "sb-1")


def test_fork_request_refuses_what_it_can_see():
    with pytest.raises(ValueError, match="at least 1"):
        fork("s", 0)
    with pytest.raises(TypeError, match="snapshot or a sandbox"):
        fork(42)


def test_snapshot_name():
    assert snapshot_name(None) == ""
    assert snapshot_name("x") == "x"


def test_snapshot_info_from_pb():
    pb = snapshot_pb2.Snapshot(
        name="s",
        namespace="default",
        phase=snapshot_pb2.SNAPSHOT_PHASE_READY,
        contents=snapshot_pb2.SNAPSHOT_CONTENTS_FILES,
        size_bytes=7,
        volumes=["workspace"],
        used_by=["pool/p"],
        storage="overlayfs",
    )
    info = SnapshotInfo.from_pb(pb)
    assert info.memory is False and info.size_bytes == 7 and info.volumes == ("workspace",)
    assert info.used_by == ("pool/p",) and info.phase.value == "Ready"
    pb.contents = snapshot_pb2.SNAPSHOT_CONTENTS_FILES_AND_MEMORY
    assert SnapshotInfo.from_pb(pb).memory is True


def test_snapshot_reasons_narrow_their_codes():
    nf = from_rpc_error(with_reason(grpc.StatusCode.NOT_FOUND, "nope", "SNAPSHOT_NOT_FOUND"))
    assert type(nf) is sandpod.SnapshotNotFound and isinstance(nf, sandpod.NotFound)
    assert not isinstance(nf, sandpod.SandboxNotFound)
    used = from_rpc_error(
        with_reason(grpc.StatusCode.FAILED_PRECONDITION, "in use", "SNAPSHOT_IN_USE")
    )
    assert type(used) is sandpod.SnapshotInUse and isinstance(used, sandpod.FailedPrecondition)
    plain = from_rpc_error(FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "other"))
    assert not isinstance(plain, sandpod.SnapshotInUse)
