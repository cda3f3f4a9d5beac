"""File watching on the real server with the real client: what commands in the sandbox
do under a watched directory comes back as events, recursively into directories made
after the watch started."""

from __future__ import annotations

import asyncio

import pytest

import sandpod
from sandpod import FileEventType as T

from .conftest import Server

LONG = 90.0  # generous: a loaded 2-core machine


def shown(ev: sandpod.FileEvent) -> tuple[str, str, str | None]:
    return (ev.type.value, ev.path + ("/" if ev.is_dir else ""), ev.old_path)


def take(events, want: list[tuple[str, str, str | None]], seen: list) -> None:
    """Reads events until every one of ``want`` came; a repeat of one already seen may
    come too (a tree made at once can be reported by its scan and by its watch)."""
    missing = list(want)
    while missing:
        ev = shown(next(events))
        assert ev in missing or ev in seen, (ev, missing, seen)
        if ev in missing:
            missing.remove(ev)
        seen.append(ev)


def test_watch_create_write_rename_remove_and_new_subdirectories(sandbox):
    sandbox.files.mkdir("w")
    seen: list = []
    with sandbox.files.watch("w", recursive=True, timeout=LONG * 2) as w:
        assert w.path == "w"  # ready: everything from here on is reported
        events = iter(w)
        # The files API writes beside the file and renames over it: that shows as the
        # file made and written, its temporary name never.
        sandbox.files.write("w/a.txt", b"one")
        take(events, [("create", "w/a.txt", None), ("write", "w/a.txt", None)], seen)
        sandbox.run("printf two >> w/a.txt", check=True)
        take(events, [("write", "w/a.txt", None)], seen)
        sandbox.run("mv w/a.txt w/b.txt", check=True)
        take(events, [("rename", "w/b.txt", "w/a.txt")], seen)
        sandbox.run("mkdir w/sub", check=True)
        take(events, [("create", "w/sub/", None)], seen)
        sandbox.run("touch w/sub/new", check=True)
        take(events, [("create", "w/sub/new", None)], seen)
        # touch, not a write: whether a write lands before the new watch is a race
        sandbox.run("mkdir -p w/x/y && touch w/x/y/deep.txt", check=True)
        take(
            events,
            [
                ("create", "w/x/", None),
                ("create", "w/x/y/", None),
                ("create", "w/x/y/deep.txt", None),
            ],
            seen,
        )
        sandbox.files.remove("w/b.txt")
        take(events, [("remove", "w/b.txt", None)], seen)
    kinds = {e[0] for e in seen}
    assert {"create", "write", "rename", "remove"} <= kinds
    assert all(isinstance(T(k), T) for k in kinds)


def test_watch_missing_directory_and_a_file(sandbox):
    with pytest.raises(sandpod.FileNotFound, match="does not exist"):
        sandbox.files.watch("no/such/dir")
    sandbox.files.write("plain.txt", b"x")
    with pytest.raises(sandpod.InvalidArgument, match="not a directory"):
        sandbox.files.watch("plain.txt")


def test_watch_ends_at_its_timeout_and_when_the_directory_goes(sandbox):
    sandbox.files.mkdir("quiet")
    assert list(sandbox.files.watch("quiet", timeout=1)) == []
    sandbox.files.mkdir("doomed")
    w = sandbox.files.watch("doomed", timeout=LONG * 2)
    sandbox.run("rm -rf doomed", check=True)
    assert [shown(e) for e in w][-1] == ("remove", "doomed/", None)


def test_async_watch(server: Server):
    async def main() -> None:
        async with (
            sandpod.AsyncClient(
                server.address, token=server.token, timeout=120, progress=False
            ) as client,
            await client.claim("python") as sb,
        ):
            await sb.files.mkdir("aw")
            async with sb.files.watch("aw", recursive=True, timeout=LONG * 2) as w:
                assert w.path == "aw"
                await sb.run("mkdir aw/d && touch aw/d/f", check=True)
                got = []
                async for ev in w:
                    got.append(shown(ev))
                    if ("create", "aw/d/f", None) in got:
                        break
                assert got[0] == ("create", "aw/d/", None)
            # async for on a fresh watch waits for its ready event by itself
            w2 = sb.files.watch("aw", timeout=LONG * 2)
            w2ready = await w2
            await sb.run("touch aw/g", check=True)
            async for ev in w2ready:
                assert shown(ev) == ("create", "aw/g", None)
                w2.close()
            with pytest.raises(sandpod.FileNotFound):
                await sb.files.watch("missing")

    asyncio.run(main())
