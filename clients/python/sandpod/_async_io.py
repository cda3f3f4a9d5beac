"""What the asyncio client does differently from the sync one: tasks and ``grpc.aio``
where :mod:`sandpod._sync_io` has threads and blocking gRPC calls.

:mod:`sandpod._async_client` is written once for both flavours (``hack/unasync.py``
generates :mod:`sandpod._client` from it); whatever cannot be (the channel, stream
reading, exec senders, claim_many, opening watches, and the condition and worker that
the handles written once in ``_process``, ``_terminal``, ``_watch`` and ``_filewatch``
use) lives here, with the same names as in :mod:`sandpod._sync_io`. Hand-written.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from . import _base
from ._base import OnExit, Timeout, UseClientDefault
from ._errors import ServerError, Unavailable
from ._models import CommandResult, Output, OutputDecoder
from ._progress import CountBar, WaitBar
from .v1 import exec_pb2, sandbox_service_pb2, sandbox_service_pb2_grpc

if TYPE_CHECKING:
    from ._async_client import AsyncClient, AsyncSandbox
    from ._filewatch import AsyncFileWatch
    from ._process import AsyncProcess
    from ._terminal import AsyncTerminal
    from ._watch import AsyncWatch

__all__ = ["AsyncCondition", "AsyncWorker", "ClaimBatch"]

_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def initial_channel(
    settings: _base.ClientSettings,
) -> tuple[None, None]:
    """Nothing yet: the channel is opened on first use (``AsyncClient._stub``), inside
    the running event loop."""
    return None, None


def open_channel(
    settings: _base.ClientSettings,
) -> tuple[grpc.aio.Channel, sandbox_service_pb2_grpc.SandboxServiceStub]:
    if settings.credentials is not None:
        channel = grpc.aio.secure_channel(
            settings.address, settings.credentials, options=settings.options
        )
    else:
        channel = grpc.aio.insecure_channel(settings.address, options=settings.options)
    return channel, sandbox_service_pb2_grpc.SandboxServiceStub(channel)


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
        cause = await _why_unreachable(channel)
        if cause is not None:
            raise Unavailable(
                _base.no_server_message(client.address, wait, cause),
                code=grpc.StatusCode.UNAVAILABLE,
            ) from None
    client._reached = True


async def _why_unreachable(channel: grpc.aio.Channel) -> str | None:
    """See :func:`sandpod._sync_io._why_unreachable`."""
    check = channel.unary_unary(_base.HEALTH_CHECK)
    try:
        await check(b"", timeout=1.0)
    except grpc.RpcError as err:
        if err.code() in (_UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return err.details() or err.code().name.lower()
    return None


async def with_wait_bar(
    callable_: Any, request: Any, timeout: float | None, metadata: Any, desc: str
) -> Any:
    """One unary call, with a progress bar that ticks while it waits."""
    task = asyncio.ensure_future(callable_(request, timeout=timeout, metadata=metadata))
    try:
        with WaitBar(True, desc) as bar:
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.2)
                if done:
                    return task.result()
                bar.tick()
    except BaseException:
        task.cancel()
        raise


async def delete_all(sandboxes: Iterable[AsyncSandbox]) -> None:
    """Best-effort delete of many sandboxes, concurrently; never raises."""
    await asyncio.gather(*(sb._release() for sb in sandboxes), return_exceptions=True)


async def read(call: Any) -> Any:
    """The next message of a server stream, None at its end (an error status raises;
    so does a call cancelled by us: asyncio.CancelledError)."""
    resp = await call.read()
    return None if resp is grpc.aio.EOF else resp


async def responses(call: Any) -> AsyncIterator[Any]:
    """The messages of a server stream until its end (an error status raises)."""
    while True:
        resp = await call.read()
        if resp is grpc.aio.EOF:
            return
        yield resp


# --- primitives of the handles written once (_terminal, _filewatch) ---------------


class AsyncCondition:
    """An asyncio condition whose waits take a timeout, as a threading one's do
    (:class:`sandpod._sync_io.Condition` is the twin)."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()

    async def __aenter__(self) -> AsyncCondition:
        await self._cond.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cond.release()

    def notify_all(self) -> None:
        self._cond.notify_all()

    async def wait(self, timeout: float | None = None) -> bool:
        """Waits (holding the lock) for a notify; False if ``timeout`` ran out first."""
        try:
            await asyncio.wait_for(self._cond.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def wait_for(self, predicate: Callable[[], object], timeout: float | None) -> bool:
        """Waits (holding the lock) until ``predicate()`` is true; False if ``timeout``
        ran out first."""
        try:
            await asyncio.wait_for(self._cond.wait_for(predicate), timeout)
        except asyncio.TimeoutError:
            return False
        return True


class AsyncWorker:
    """Runs a coroutine function as a task of its own: a handle's reader
    (:class:`sandpod._sync_io.Worker` runs it on a thread)."""

    def __init__(self, target: Callable[[], Any], name: str) -> None:
        self._task = asyncio.create_task(target(), name=name)

    async def join(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds for the end (never cancels it); True if it
        ended."""
        await asyncio.wait({self._task}, timeout=timeout)
        return self._task.done()


# --- watches ------------------------------------------------------------------------


def open_watch(client: AsyncClient, req: Any, deadline: float | None) -> AsyncWatch:
    """Starts ``AsyncClient.watch``: at once (the first read waits for the server)."""
    from ._watch import AsyncWatch  # it uses this module's helpers

    call = client._stub.WatchSandboxes(req, timeout=deadline, metadata=client._metadata)
    return AsyncWatch(call, bounded=deadline is not None, client=client)


def open_file_watch(sandbox: AsyncSandbox, req: Any, deadline: float | None) -> AsyncFileWatch:
    """Starts ``AsyncFiles.watch``: the AsyncFileWatch opens the call when first
    awaited or iterated."""
    from ._filewatch import AsyncFileWatch  # it uses this module's helpers

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
    sender = _ExecSender(call, first)
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
) -> tuple[Any, _ExecSender, exec_pb2.ExecResponse]:
    """Opens an exec and reads its first response (``started``, or an early end)."""
    await sandbox._client._await_server(_base.exec_deadline(limit))
    call = _open_exec(sandbox, limit)
    sender = _ExecSender(call, first)
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
    from ._process import AsyncProcess  # it uses this module's helpers

    call, sender, resp = await _started(sandbox, first, text, limit, "exec of")
    return AsyncProcess(sandbox, call, sender, text, limit, resp)


async def start_terminal(
    sandbox: AsyncSandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None
) -> AsyncTerminal:
    """``AsyncSandbox.terminal``."""
    from ._terminal import AsyncTerminal  # it uses this module's helpers

    call, sender, resp = await _started(sandbox, first, text, limit, "terminal")
    return AsyncTerminal(sandbox, call, sender, text, resp)


async def _send(call: Any, req: exec_pb2.ExecRequest) -> bool:
    """Writes one message after the first; False if the RPC already ended.

    A command can end (and the server close the RPC) before it read its stdin, so a
    write may race with the end. grpc.aio's ``write`` then replaces the RPC's real
    status with a local INTERNAL error and drops the output not read yet; sending
    through the call's core object instead leaves the status and the output to the
    reads, as the sync client does.
    """
    if call.done():
        return False
    core = getattr(call, "_cython_call", None)
    if core is None or not hasattr(core, "send_serialized_message"):
        try:
            await call.write(req)
        except (grpc.RpcError, asyncio.InvalidStateError):
            return False
        return True
    try:
        await core.send_serialized_message(req.SerializeToString())
    except asyncio.CancelledError:
        raise
    except Exception:  # cygrpc.InternalError: the RPC ended under us
        return False
    return True


class _ExecSender:
    """Writes the requests of one exec from a task of its own: the start message, then
    signals at once and stdin within the server's stdin window (see ExecInput), as the
    reader passes on the server's messages (``on_response``). Queueing never blocks."""

    def __init__(self, call: Any, first: exec_pb2.ExecRequest) -> None:
        self._call = call
        self._input = _base.ExecInput(first)
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._run())

    def _wake(self) -> None:
        self._changed.set()

    def put_stdin(self, data: bytes) -> None:
        self._input.put_stdin(data)
        self._wake()

    def close_stdin(self) -> None:
        self._input.close_stdin()
        self._wake()

    def signal(self, signal: int) -> None:
        self._input.signal(signal)
        self._wake()

    def resize(self, size: exec_pb2.TerminalSize) -> None:
        self._input.resize(size)
        self._wake()

    def on_response(self, resp: exec_pb2.ExecResponse) -> None:
        if self._input.on_response(resp):
            self._wake()

    def end(self) -> None:
        self._input.end()
        self._wake()

    async def close(self) -> None:
        """Ends sending, and the call: the reader saw its end or gives up on it. A write
        still waiting for the server is abandoned. (The sync sender has no call to end:
        a sync call ends with its reads.)"""
        self.end()
        if not self._task.done():
            self._task.cancel()
        await asyncio.wait([self._task])
        self._call.cancel()

    async def _run(self) -> None:
        first = True
        while True:
            msg = self._input.pop()
            if msg is None:
                if self._input.ended:
                    return
                self._changed.clear()
                await self._changed.wait()
                continue
            if first:
                # The first write goes through grpc.aio itself, which also starts the
                # call; a failure shows in the reads.
                first = False
                try:
                    await self._call.write(msg)
                except (grpc.RpcError, asyncio.InvalidStateError):
                    return
            elif not await _send(self._call, msg):
                return
