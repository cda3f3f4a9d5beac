"""The asyncio client's operations that differ in kind from the sync ones: waiting for
the server, opening watches, ``claim_many`` (:class:`ClaimBatch`), and the exec calls
behind ``run``, ``start`` and ``terminal``, with the same names as in
:mod:`sandpod._sync_ops`.

Builders: they sit above the handles they open (``_watch``, ``_filewatch``,
``_process``, ``_terminal``) and the primitives of :mod:`sandpod._async_io`, and below
:mod:`sandpod._async_client`, which calls them as ``_ops`` (``hack/unasync.py`` turns
that into this module's sync twin). Hand-written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from . import _base
from ._async_io import ExecSender, delete_all, why_unreachable
from ._base import OnExit, Timeout, UseClientDefault
from ._errors import ServerError, Unavailable
from ._filewatch import AsyncFileWatch
from ._models import CommandResult, Output, OutputDecoder
from ._process import AsyncProcess
from ._progress import CountBar
from ._terminal import AsyncTerminal
from ._watch import AsyncWatch
from .v1 import exec_pb2, sandbox_service_pb2

if TYPE_CHECKING:
    from ._async_client import AsyncClient, AsyncSandbox

__all__ = ["ClaimBatch"]


async def close_channel(client: AsyncClient) -> None:
    if client._channel is not None:
        channel, client._channel, client._stub_ = client._channel, None, None
        await channel.close()


async def await_server(client: AsyncClient, budget: float | None) -> None:
    """See :meth:`sandpod.Client._await_server`."""
    limit = client._settings.connect_timeout
    if client._reached or limit is None:
        return
    client._stub  # noqa: B018 - opens the channel
    channel = client._channel
    if channel is None:  # a stub given without a channel (tests)
        return
    wait = limit if budget is None else min(limit, budget)
    try:
        await asyncio.wait_for(channel.channel_ready(), wait)
    except asyncio.TimeoutError:
        cause = await why_unreachable(channel)
        if cause is not None:
            raise Unavailable(
                _base.no_server_message(client.address, wait, cause),
                code=grpc.StatusCode.UNAVAILABLE,
            ) from None
    client._reached = True


# --- watches ------------------------------------------------------------------------


def open_watch(client: AsyncClient, req: Any, deadline: float | None) -> AsyncWatch:
    """Starts ``AsyncClient.watch``: at once (the first read waits for the server)."""
    call = client._stub.WatchSandboxes(req, timeout=deadline, metadata=client._metadata)
    return AsyncWatch(call, bounded=deadline is not None, client=client)


def open_file_watch(sandbox: AsyncSandbox, req: Any, deadline: float | None) -> AsyncFileWatch:
    """Starts ``AsyncFiles.watch``: the AsyncFileWatch opens the call when first
    awaited or iterated."""
    client = sandbox._client

    async def opener() -> Any:
        await client._await_server(deadline)
        return client._stub.WatchFiles(req, timeout=deadline, metadata=client._metadata)

    return AsyncFileWatch(sandbox, opener, bounded=deadline is not None)


# --- claim_many ---------------------------------------------------------------------


def claim_many(
    client: AsyncClient,
    template: str,
    n: int,
    concurrency: int,
    make_request: Callable[[], sandbox_service_pb2.ClaimSandboxRequest],
    on_exit: OnExit,
    timeout: Timeout | UseClientDefault,
) -> ClaimBatch:
    """``AsyncClient.claim_many``: a batch that claims as it is iterated."""
    make_request()  # validate the arguments now, not in n tasks
    return ClaimBatch(client, n, concurrency, make_request, on_exit, timeout)


class ClaimBatch:
    """The sandboxes of one ``AsyncClient.claim_many`` call, yielded as soon as each is
    ready (an async iterator and an async context manager)::

        async with client.claim_many("python", 64) as batch:
            async for sandbox in batch:
                ...

    If the caller gives up (an exception or a cancellation leaves the ``async with``)
    every sandbox the batch claimed is deleted, also those already yielded; after a
    normal exit (including ``break``) only the ones never handed out are. A claim
    that fails (after its retries) ends the iteration with its error.
    """

    def __init__(
        self,
        client: AsyncClient,
        n: int,
        concurrency: int,
        make_request: Callable[[], sandbox_service_pb2.ClaimSandboxRequest],
        on_exit: OnExit,
        timeout: Timeout | UseClientDefault,
    ) -> None:
        self._client = client
        self._n = n
        self._concurrency = concurrency
        self._make_request = make_request
        self._on_exit = on_exit
        self._timeout = timeout
        self._queue: asyncio.Queue[AsyncSandbox | BaseException] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._claimed: list[AsyncSandbox] = []
        self._yielded: list[AsyncSandbox] = []
        self._closing = False
        self._bar: CountBar | None = None

    @property
    def claimed(self) -> list[AsyncSandbox]:
        """Every sandbox claimed so far (yielded or not)."""
        return list(self._claimed)

    def _start(self) -> None:
        self._queue = asyncio.Queue()
        self._bar = CountBar(self._client._settings.progress, self._n, "sandpod: claiming")
        sem = asyncio.Semaphore(self._concurrency)
        for _ in range(self._n):
            self._tasks.append(asyncio.create_task(self._one(sem)))

    async def _one(self, sem: asyncio.Semaphore) -> None:
        assert self._queue is not None
        async with sem:
            if self._closing:
                return
            # Once sent, a claim is never cancelled half-way: it finishes (or fails) so
            # that what it got can be handed out or released, never leaked.
            claim = asyncio.ensure_future(
                self._client._claim(
                    self._make_request(), self._on_exit, self._timeout, wait_bar=False
                )
            )
            try:
                sb = await asyncio.shield(claim)
            except asyncio.CancelledError:
                try:
                    sb = await claim
                except Exception:
                    return
            except Exception as err:
                self._queue.put_nowait(err)
                return
        self._claimed.append(sb)
        if self._bar is not None:
            self._bar.update()
        self._queue.put_nowait(sb)

    def __aiter__(self) -> ClaimBatch:
        return self

    async def __anext__(self) -> AsyncSandbox:
        if self._queue is None:
            self._start()
        assert self._queue is not None
        if len(self._yielded) >= self._n or self._closing:
            self._finish_bar()
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            await self._release(keep_yielded=True)
            raise item
        self._yielded.append(item)
        return item

    def _finish_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()

    async def _release(self, *, keep_yielded: bool) -> None:
        """Stops claiming, lets in-flight claims land, and deletes what they got."""
        self._closing = True
        for task in self._tasks:
            task.cancel()  # claims in flight are shielded and still land
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._finish_bar()
        keep = {id(sb) for sb in self._yielded} if keep_yielded else set()
        await delete_all(sb for sb in self._claimed if id(sb) not in keep)

    async def aclose(self) -> None:
        """Releases the sandboxes that were never handed out."""
        await asyncio.shield(self._release(keep_yielded=True))

    async def __aenter__(self) -> ClaimBatch:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Shielded: a second cancellation cannot stop the cleanup half-way.
        await asyncio.shield(self._release(keep_yielded=exc is None))


# --- exec ---------------------------------------------------------------------------


def _open_exec(sandbox: AsyncSandbox, limit: float | None) -> Any:
    client = sandbox._client
    return client._stub.Exec(
        timeout=_base.exec_deadline(limit),
        metadata=client._metadata,
        wait_for_ready=True,
    )


async def run_exec(
    sandbox: AsyncSandbox,
    first: exec_pb2.ExecRequest,
    text: str,
    limit: float | None,
    stdin: _base.Source | None,
    check: bool,
    on_output: Callable[[Output], object] | None,
) -> CommandResult:
    """``AsyncSandbox.run`` once its request is built: send, read to the exit."""
    await sandbox._client._await_server(_base.exec_deadline(limit))
    call = _open_exec(sandbox, limit)
    sender = ExecSender(call, first)
    decoder = OutputDecoder()
    try:
        if stdin is not None:
            for chunk in _base.iter_source(stdin):
                sender.put_stdin(chunk)
        sender.close_stdin()
        while True:
            resp = await call.read()
            if resp is grpc.aio.EOF:
                raise ServerError(f"exec of {text!r} ended without an exit status")
            sender.on_response(resp)
            if resp.WhichOneof("msg") == "exit":
                result = decoder.result(resp.exit, text)
                await sandbox._answered()
                return result.check() if check else result
            out = decoder.feed_response(resp)
            if out is not None and on_output is not None:
                on_output(out)
    except grpc.RpcError as err:
        raise sandbox._noted(_base.exec_error(err, text, limit)) from None
    finally:
        await sender.close()
        call.cancel()


async def _started(
    sandbox: AsyncSandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None, what: str
) -> tuple[Any, ExecSender, exec_pb2.ExecResponse]:
    """Opens an exec and reads its first response (``started``, or an early end)."""
    await sandbox._client._await_server(_base.exec_deadline(limit))
    call = _open_exec(sandbox, limit)
    sender = ExecSender(call, first)
    try:
        resp = await call.read()
    except grpc.RpcError as err:
        await sender.close()
        call.cancel()
        raise sandbox._noted(_base.exec_error(err, text, limit)) from None
    if resp is grpc.aio.EOF:
        await sender.close()
        call.cancel()
        raise ServerError(f"{what} {text!r} ended before it started")
    sender.on_response(resp)
    await sandbox._answered()
    return call, sender, resp


async def start_process(
    sandbox: AsyncSandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None
) -> AsyncProcess:
    """``AsyncSandbox.start``."""
    call, sender, resp = await _started(sandbox, first, text, limit, "exec of")
    return AsyncProcess(sandbox, call, sender, text, limit, resp)


async def start_terminal(
    sandbox: AsyncSandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None
) -> AsyncTerminal:
    """``AsyncSandbox.terminal``."""
    call, sender, resp = await _started(sandbox, first, text, limit, "terminal")
    return AsyncTerminal(sandbox, call, sender, text, resp)
