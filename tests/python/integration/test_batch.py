"""claim_many: 20 sandboxes from a pool of 5, sync and asyncio, and cleanup on failure."""

from __future__ import annotations

import asyncio

import pytest

import sandpod


def test_claim_many_sync(client, labels):
    with client.claim_many("python", 20, concurrency=8, labels=labels) as sandboxes:
        assert len(sandboxes) == 20
        assert len({sb.name for sb in sandboxes}) == 20
        assert all(sb.status is sandpod.Phase.RUNNING for sb in sandboxes)
        for sb in sandboxes:
            assert sb.run(["sh", "-c", "echo $0", sb.name]).stdout == sb.name + "\n"
        assert len(client.list(labels=labels)) == 20
    assert client.list(labels=labels) == []


def test_claim_many_sync_releases_everything_on_failure(client, labels, monkeypatch):
    real = client._claim
    calls = {"n": 0}

    def flaky(req, on_exit, timeout, *, wait_bar):
        calls["n"] += 1
        if calls["n"] == 6:
            raise sandpod.ResourceExhausted("simulated: quota")
        return real(req, on_exit, timeout, wait_bar=wait_bar)

    monkeypatch.setattr(client, "_claim", flaky)
    with pytest.raises(sandpod.ResourceExhausted):
        client.claim_many("python", 10, concurrency=2, labels=labels)
    assert calls["n"] >= 6
    assert client.list(labels=labels) == []


def test_claim_many_async_yields_as_ready_and_runs(server, labels):
    async def main() -> None:
        async with sandpod.AsyncClient(server.address, timeout=120, progress=False) as client:
            async with client.claim_many("python", 20, concurrency=8, labels=labels) as batch:
                got = [sb async for sb in batch]
                assert len({sb.name for sb in got}) == 20
                results = await asyncio.gather(*(sb.run(f"echo {i}") for i, sb in enumerate(got)))
                assert [r.stdout for r in results] == [f"{i}\n" for i in range(20)]
                # Yielded sandboxes belong to the caller after a normal exit.
            assert len(await client.list(labels=labels)) == 20
            await asyncio.gather(*(sb.delete() for sb in got))
            assert await client.list(labels=labels) == []

    asyncio.run(main())


def test_claim_many_async_releases_all_when_the_caller_gives_up(server, labels):
    async def main() -> None:
        async with sandpod.AsyncClient(server.address, timeout=120, progress=False) as client:
            with pytest.raises(RuntimeError, match="gave up"):
                async with client.claim_many("python", 12, concurrency=4, labels=labels) as b:
                    async for i, _sb in _enumerate(b):
                        if i == 2:
                            raise RuntimeError("gave up")
            assert await client.list(labels=labels) == []

            # Cancelling the consumer releases everything too.
            async def consume() -> None:
                async with client.claim_many("python", 12, concurrency=4, labels=labels) as b:
                    async for _sb in b:
                        await asyncio.sleep(3600)

            task = asyncio.create_task(consume())
            while not await client.list(labels=labels):
                await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await client.list(labels=labels) == []

            # break: the ones never handed out are released, the ones taken are kept.
            async with client.claim_many("python", 6, concurrency=6, labels=labels) as b:
                first = await b.__anext__()
            [kept] = await client.list(labels=labels)
            assert kept.name == first.name
            await first.delete()

    asyncio.run(main())


async def _enumerate(it):
    i = 0
    async for x in it:
        yield i, x
        i += 1


def test_async_sandbox_surface(server, labels):
    async def main() -> None:
        async with sandpod.AsyncClient(server.address, timeout=120, progress=False) as client:
            async with await client.claim("python", labels=labels) as sb:
                r = await sb.run("echo hi; exit 2")
                assert (r.stdout, r.exit_code) == ("hi\n", 2)
                with pytest.raises(sandpod.CommandFailed):
                    await sb.run("exit 1", check=True)
                await sb.files.write("x/y.txt", "async text")
                assert await sb.files.read_text("x/y.txt") == "async text"
                assert [f.name for f in await sb.files.list("x")] == ["y.txt"]
                async with await sb.start("cat") as cat:
                    await cat.write_stdin("piped")
                    await cat.close_stdin()
                    outs = [o.text async for o in cat]
                    assert "".join(outs) == "piped"
                    assert (await cat.wait()).exit_code == 0
                for _ in range(20):  # ends before reading its stdin, or before we close it
                    r = await sb.run("head -c 3; exit 4", stdin=b"y" * (2 << 20))
                    assert (r.stdout, r.exit_code) == ("yyy", 4)
                    assert (await sb.run(["true"])).ok
                t = await sb.run("sleep 60", timeout=1)
                assert t.timed_out
                await sb.suspend()
                await sb.resume()
                assert await sb.files.read_text("x/y.txt") == "async text"
                again = await client.get(sb.name)
                assert again.info.uid == sb.info.uid
            assert await client.list(labels=labels) == []

    asyncio.run(main())
