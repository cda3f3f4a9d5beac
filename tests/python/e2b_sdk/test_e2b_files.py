"""Files through E2B's SDK: write, read, list, exists, info, make dir,
rename, remove and watch, sync and async."""

from __future__ import annotations

import asyncio
import io
import time

import pytest
from e2b import AsyncSandbox, FilesystemEventType, FileType, NotFoundException
from e2b.sandbox.filesystem.filesystem import WriteEntry

from .conftest import TEMPLATE


def test_write_read_text_and_bytes(sbx) -> None:
    info = sbx.files.write("notes/a.txt", "hello")
    assert (info.path, info.type) == ("/home/user/notes/a.txt", FileType.FILE)
    assert sbx.files.read("/home/user/notes/a.txt") == "hello"
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value
    sbx.files.write("blob.bin", io.BytesIO(data))  # a file object: octet-stream upload
    assert bytes(sbx.files.read("blob.bin", format="bytes")) == data
    assert sbx.commands.run("cat notes/a.txt").stdout == "hello"


def test_write_files_at_once(sbx) -> None:
    infos = sbx.files.write_files(
        [WriteEntry(path="m/one.txt", data="1"), WriteEntry(path="/tmp/two.txt", data=b"2")]
    )
    assert [i.path for i in infos] == ["/home/user/m/one.txt", "/tmp/two.txt"]
    assert sbx.files.read("/tmp/two.txt") == "2"


def test_list_exists_info_make_dir_rename_remove(sbx) -> None:
    assert sbx.files.make_dir("tree/deep") is True
    assert sbx.files.make_dir("tree/deep") is False  # already there
    sbx.files.write("tree/top.txt", "t")
    sbx.files.write("tree/deep/low.txt", "l")
    assert [e.name for e in sbx.files.list("tree")] == ["deep", "top.txt"]
    assert sorted(e.path for e in sbx.files.list("tree", depth=2)) == [
        "/home/user/tree/deep",
        "/home/user/tree/deep/low.txt",
        "/home/user/tree/top.txt",
    ]
    info = sbx.files.get_info("tree/top.txt")
    assert (info.type, info.size, info.permissions) == (FileType.FILE, 1, "-rw-r--r--")
    assert sbx.files.get_info("tree").type == FileType.DIR

    moved = sbx.files.rename("tree/top.txt", "tree/deep/moved.txt")
    assert moved.path == "/home/user/tree/deep/moved.txt"
    assert not sbx.files.exists("tree/top.txt")
    assert sbx.files.read("tree/deep/moved.txt") == "t"

    sbx.files.remove("tree")
    assert not sbx.files.exists("tree")
    with pytest.raises(NotFoundException):
        sbx.files.read("tree/deep/low.txt")


def test_watch_dir_polled(sbx) -> None:
    sbx.files.make_dir("watched")
    w = sbx.files.watch_dir("watched")
    try:
        sbx.files.write("watched/new.txt", "x")
        events = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not events:
            events = w.get_new_events()
            time.sleep(0.2)
        assert ("new.txt", FilesystemEventType.CREATE) in [(e.name, e.type) for e in events]
    finally:
        w.stop()


def test_async_files_and_watch(e2b_server) -> None:
    async def main() -> None:
        sb = await AsyncSandbox.create(TEMPLATE)
        try:
            await sb.files.make_dir("w")
            got: list = []
            seen = asyncio.Event()

            def on_event(e) -> None:
                got.append(e)
                seen.set()

            handle = await sb.files.watch_dir("w", on_event=on_event, recursive=True)
            await sb.files.write("w/a.txt", "a")
            await asyncio.wait_for(seen.wait(), 60)
            await handle.stop()
            assert got[0].name == "a.txt"
            assert await sb.files.read("w/a.txt") == "a"
            assert [e.name for e in await sb.files.list("w")] == ["a.txt"]
            assert await sb.files.exists("w/a.txt")
        finally:
            await sb.kill()

    asyncio.run(main())
