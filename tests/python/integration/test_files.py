"""Files: round trips in every form, a multi-MiB file, listing, errors."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os

import pytest

import sandpod


def test_round_trip_bytes_text_and_file_objects(sandbox, tmp_path):
    info = sandbox.files.write("a/b/bytes.bin", b"\x00\x01\xff")
    assert info.size == 3 and info.path.endswith("a/b/bytes.bin") and not info.is_dir
    assert sandbox.files.read("a/b/bytes.bin") == b"\x00\x01\xff"

    sandbox.files.write("text.txt", "héllo wörld\n")
    assert sandbox.files.read_text("text.txt") == "héllo wörld\n"
    assert sandbox.run("cat text.txt").stdout == "héllo wörld\n"

    sandbox.files.write("from-binary-io", io.BytesIO(b"binary io"))
    sandbox.files.write("from-text-io", io.StringIO("text io"))
    sandbox.files.write("from-iterable", (bytes([i]) * 10 for i in range(3)))
    assert sandbox.files.read("from-binary-io") == b"binary io"
    assert sandbox.files.read_text("from-text-io") == "text io"
    assert sandbox.files.read("from-iterable") == b"\x00" * 10 + b"\x01" * 10 + b"\x02" * 10

    # Files the sandbox writes are visible to the client, and partial reads work.
    sandbox.run("printf 0123456789 > digits")
    assert sandbox.files.read("digits", offset=3, length=4) == b"3456"
    assert sandbox.files.read("digits", offset=8) == b"89"


def test_multi_mib_file(sandbox, tmp_path):
    data = os.urandom(5 << 20) + b"tail"
    sandbox.files.write("big/data.bin", data, mode=0o600)
    st = sandbox.files.stat("big/data.bin")
    assert st.size == len(data) and st.mode & 0o777 == 0o600
    digest = sandbox.run(
        [
            "python3",
            "-c",
            "import hashlib;print(hashlib.sha256(open('big/data.bin','rb').read()).hexdigest())",
        ]
    ).stdout.strip()
    assert digest == hashlib.sha256(data).hexdigest()
    chunks = list(sandbox.files.read_chunks("big/data.bin"))
    assert len(chunks) >= 5 and all(len(c) <= 1 << 20 for c in chunks)
    assert b"".join(chunks) == data

    local = tmp_path / "local.bin"
    local.write_bytes(data)
    sandbox.files.upload(local, "uploaded.bin")
    out = tmp_path / "downloaded.bin"
    assert sandbox.files.download("uploaded.bin", out) == len(data)
    assert out.read_bytes() == data


def test_list_stat_mkdir_remove(sandbox):
    d = sandbox.files.mkdir("tree/x/y")
    assert d.is_dir
    sandbox.files.mkdir("tree/x/y")  # parents=True: an existing directory is fine
    sandbox.files.write("tree/one.txt", "1")
    sandbox.files.write("tree/x/two.txt", "22")
    names = {f.name: f for f in sandbox.files.list("tree")}
    assert set(names) == {"one.txt", "x"}
    assert names["x"].is_dir and names["one.txt"].size == 1
    assert sandbox.files.exists("tree/x/two.txt")
    sandbox.files.remove("tree/one.txt")
    assert not sandbox.files.exists("tree/one.txt")
    with pytest.raises(sandpod.SandpodError):
        sandbox.files.remove("tree")  # not empty, not recursive
    sandbox.files.remove("tree", recursive=True)
    assert not sandbox.files.exists("tree")


def test_write_is_atomic_and_replaces(sandbox):
    sandbox.files.write("f.txt", "old content")
    sandbox.files.write("f.txt", "new")
    assert sandbox.files.read_text("f.txt") == "new"


def test_file_errors_are_typed(sandbox):
    with pytest.raises(sandpod.FileNotFound):
        sandbox.files.read("no/such/file")
    with pytest.raises(sandpod.FileNotFound):
        sandbox.files.stat("missing")
    with pytest.raises((sandpod.InvalidArgument, sandpod.PermissionDenied)):
        sandbox.files.read("../../etc/passwd")
    with pytest.raises((sandpod.InvalidArgument, sandpod.PermissionDenied)):
        sandbox.files.write("../escape.txt", "x")
    sandbox.files.mkdir("exists", parents=False)
    with pytest.raises(sandpod.AlreadyExists):
        sandbox.files.mkdir("exists", parents=False)
    with pytest.raises(sandpod.FileNotFound):
        sandbox.files.write("no/parents/here.txt", "x", make_parents=False)


def test_special_files_are_refused_and_reads_are_bounded(sandbox, server):
    # Planted by the sandbox's code: a fifo (whose open would block until a writer
    # came), links to it and to /dev/zero (endless), and a sparse file of 2 GiB.
    r = sandbox.run(
        "mkfifo fifo && ln -s fifo fifolink && ln -s /dev/zero zero && truncate -s 2G sparse"
    )
    assert r.exit_code == 0, r.stderr
    for path in ("fifo", "fifolink", "zero", "/dev/null"):
        with pytest.raises(sandpod.FailedPrecondition) as e:
            sandbox.files.read(path)
        assert e.value.reason == "NOT_A_REGULAR_FILE" and path in e.value.message
    with pytest.raises(sandpod.FailedPrecondition, match="fifo"):
        sandbox.files.list("fifo")
    # read() holds the file in memory: over max_size it raises, having read at most
    # one byte more; the async twin does the same.
    with pytest.raises(sandpod.ResourceExhausted, match="max_size"):
        sandbox.files.read("sparse", max_size=1 << 20)
    assert len(sandbox.files.read("sparse", length=4096, max_size=1 << 20)) == 4096

    async def main() -> None:
        async with sandpod.AsyncClient(server.address, timeout=120, progress=False) as client:
            sb = await client.get(sandbox.name)
            with pytest.raises(sandpod.ResourceExhausted):
                await sb.files.read("sparse", max_size=1 << 20)
            with pytest.raises(sandpod.FailedPrecondition):
                await sb.files.read("zero")

    asyncio.run(main())
