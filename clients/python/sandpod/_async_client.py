"""The asyncio client: :class:`AsyncClient`, :class:`AsyncSandbox`, :class:`AsyncFiles`,
:class:`AsyncProcess` and :class:`ClaimBatch`.

The twin of :mod:`sandpod._client` (same names and parameters; a test checks it).
Everything that does no I/O is shared in :mod:`sandpod._base`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import os
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any

import grpc
import grpc.aio

from . import _base, _code_client
from ._base import USE_CLIENT_DEFAULT, ClientSettings, OnExit, Timeout, UseClientDefault
from ._client import Source, _iter_source, _watch_ended
from ._code import CodeContextInfo, Execution, Result
from ._code_client import AsyncCodeContext
from ._errors import (
    FileNotFound,
    NotFound,
    SandboxNotFound,
    SandboxTimeout,
    SandpodError,
    ServerError,
    Unavailable,
    from_rpc_error,
)
from ._filewatch import AsyncFileWatch
from ._models import (
    CommandResult,
    ExposedPort,
    FileInfo,
    Output,
    OutputDecoder,
    Phase,
    SandboxInfo,
    Template,
    WarmPool,
    WatchEvent,
    label_selector,
    sandbox_html,
)
from ._progress import CountBar, WaitBar
from ._retry import RetryPolicy, RetryState
from ._snapshots import AsyncForkList, AsyncSnapshot, SnapshotInfo, fork_request, snapshot_name
from ._terminal import AsyncTerminal, terminal_start
from .v1 import (
    code_pb2,
    exec_pb2,
    files_pb2,
    preview_pb2,
    sandbox_service_pb2,
    sandbox_service_pb2_grpc,
    snapshot_pb2,
)

__all__ = [
    "AsyncClient",
    "AsyncFiles",
    "AsyncProcess",
    "AsyncSandbox",
    "AsyncWatch",
    "ClaimBatch",
]

_pb = sandbox_service_pb2
Data = bytes | bytearray | memoryview | str
_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


class AsyncClient:
    """The asyncio twin of :class:`sandpod.Client` (same arguments).

    The channel is opened on first use, inside the running event loop.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        token: str | None = None,
        tls: bool | grpc.ChannelCredentials = False,
        namespace: str | None = None,
        timeout: Timeout = _base.DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        progress: bool | None = None,
        keepalive: float = 300.0,
        channel_options: Sequence[tuple[str, Any]] | None = None,
        connect_timeout: Timeout = _base.DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        self._settings = ClientSettings.resolve(
            address,
            token,
            tls,
            namespace,
            timeout,
            retry,
            progress,
            keepalive,
            channel_options,
            connect_timeout,
        )
        self._metadata = self._settings.metadata()
        self._channel: grpc.aio.Channel | None = None
        self._stub_: sandbox_service_pb2_grpc.SandboxServiceStub | None = None
        self._closed = False
        #: Whether the channel has been connected once (see _await_server).
        self._reached = False

    # --- plumbing -------------------------------------------------------------------

    @property
    def _stub(self) -> sandbox_service_pb2_grpc.SandboxServiceStub:
        if self._stub_ is None:
            if self._closed:
                raise RuntimeError("the client is closed")
            s = self._settings
            if s.credentials is not None:
                self._channel = grpc.aio.secure_channel(s.address, s.credentials, options=s.options)
            else:
                self._channel = grpc.aio.insecure_channel(s.address, options=s.options)
            self._stub_ = sandbox_service_pb2_grpc.SandboxServiceStub(self._channel)
        return self._stub_

    @property
    def address(self) -> str:
        return self._settings.address

    @property
    def namespace(self) -> str:
        return self._settings.namespace

    async def close(self) -> None:
        """Closes the channel. Sandboxes live on: reconnect with ``get(name)``."""
        self._closed = True
        if self._channel is not None:
            channel, self._channel, self._stub_ = self._channel, None, None
            await channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncClient(address={self.address!r}, namespace={self.namespace!r})"

    async def _await_server(self, budget: float | None) -> None:
        """See :meth:`sandpod.Client._await_server`."""
        limit = self._settings.connect_timeout
        if self._reached or limit is None:
            return
        self._stub  # noqa: B018 - opens the channel
        channel = self._channel
        if channel is None:  # a stub given without a channel (tests)
            return
        wait = limit if budget is None else min(limit, budget)
        try:
            await asyncio.wait_for(channel.channel_ready(), wait)
        except asyncio.TimeoutError:
            cause = await _why_unreachable(channel)
            if cause is not None:
                raise Unavailable(
                    _base.no_server_message(self.address, wait, cause),
                    code=grpc.StatusCode.UNAVAILABLE,
                ) from None
        self._reached = True

    async def _unary(
        self,
        method: str,
        request: Any,
        *,
        timeout: Timeout | UseClientDefault,
        idempotent: bool = True,
        backpressure: bool = False,
        request_id: str = "",
        done_on_retry: frozenset[grpc.StatusCode] = frozenset(),
        wait_desc: str = "",
    ) -> Any:
        state = RetryState(
            self._settings.retry,
            self._settings.timeout_for(timeout),
            idempotent,
            backpressure=backpressure,
        )
        await self._await_server(state.remaining())
        callable_ = getattr(self._stub, method)
        while True:
            attempt_timeout = state.attempt_timeout()
            try:
                call = callable_(request, timeout=attempt_timeout, metadata=self._metadata)
                if wait_desc and self._settings.progress:
                    return await _with_wait_bar(call, wait_desc)
                return await call
            except grpc.RpcError as err:
                code = err.code()
                if state.attempts > 1 and code in done_on_retry:
                    return None
                delay = state.next_delay(code)
                if delay is None:
                    raise from_rpc_error(err, request_id=request_id) from None
                await asyncio.sleep(delay)

    def _handle(self, pb: Any, on_exit: OnExit, warm: bool | None = None) -> AsyncSandbox:
        return AsyncSandbox(self, SandboxInfo.from_pb(pb), on_exit=on_exit, warm=warm)

    # --- lifecycle ------------------------------------------------------------------

    async def claim(
        self,
        template: str,
        *,
        ttl: Timeout = None,
        shutdown_time: _dt.datetime | None = None,
        shutdown_policy: str | None = None,
        labels: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        namespace: str | None = None,
        request_id: str | None = None,
        snapshot: AsyncSnapshot | str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """See :meth:`sandpod.Client.claim`."""
        on_exit = _base.check_on_exit(on_exit)
        req = _base.claim_request(
            template,
            self._settings.ns(namespace),
            ttl=ttl,
            shutdown_time=shutdown_time,
            shutdown_policy=shutdown_policy,
            labels=labels,
            env=env,
            request_id=request_id or _base.new_request_id(),
            snapshot=snapshot_name(snapshot),
        )
        return await self._claim(req, on_exit, timeout, wait_bar=True)

    async def _claim(
        self,
        req: sandbox_service_pb2.ClaimSandboxRequest,
        on_exit: OnExit,
        timeout: Timeout | UseClientDefault,
        *,
        wait_bar: bool,
    ) -> AsyncSandbox:
        resp = await self._unary(
            "ClaimSandbox",
            req,
            timeout=timeout,
            backpressure=True,
            request_id=req.request_id,
            wait_desc=f"sandpod: claiming a {req.template or req.snapshot} sandbox"
            if wait_bar
            else "",
        )
        return self._handle(resp.sandbox, on_exit, warm=resp.warm)

    async def create(
        self,
        template: str,
        *,
        name: str | None = None,
        ttl: Timeout = None,
        shutdown_time: _dt.datetime | None = None,
        shutdown_policy: str | None = None,
        labels: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        namespace: str | None = None,
        request_id: str | None = None,
        wait: bool = True,
        snapshot: AsyncSnapshot | str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """See :meth:`sandpod.Client.create`."""
        on_exit = _base.check_on_exit(on_exit)
        rid = request_id or _base.new_request_id()
        req = _base.create_request(
            template,
            self._settings.ns(namespace),
            name=name,
            ttl=ttl,
            shutdown_time=shutdown_time,
            shutdown_policy=shutdown_policy,
            labels=labels,
            env=env,
            request_id=rid,
            wait=wait,
            snapshot=snapshot_name(snapshot),
        )
        resp = await self._unary(
            "CreateSandbox",
            req,
            timeout=timeout,
            backpressure=True,
            request_id=rid,
            wait_desc=f"sandpod: starting a {template} sandbox" if wait else "",
        )
        return self._handle(resp.sandbox, on_exit, warm=False)

    async def get(
        self,
        name: str,
        *,
        namespace: str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """See :meth:`sandpod.Client.get`."""
        if not name:
            raise ValueError("name is required")
        on_exit = _base.check_on_exit(on_exit)
        req = _pb.GetSandboxRequest(name=name, namespace=self._settings.ns(namespace))
        resp = await self._unary("GetSandbox", req, timeout=timeout)
        return self._handle(resp.sandbox, on_exit)

    async def list(
        self,
        *,
        labels: Mapping[str, str] | str | None = None,
        namespace: str | None = None,
        include_pool_members: bool = False,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[AsyncSandbox]:
        """See :meth:`sandpod.Client.list`."""
        out: list[AsyncSandbox] = []
        token = ""
        while True:
            req = _base.list_request(
                self._settings.ns(namespace), labels, include_pool_members, token
            )
            resp = await self._unary("ListSandboxes", req, timeout=timeout)
            out.extend(self._handle(sb, "keep") for sb in resp.sandboxes)
            token = resp.next_page_token
            if not token:
                return out

    def watch(
        self,
        *,
        labels: Mapping[str, str] | str | None = None,
        namespace: str | None = None,
        include_pool_members: bool = False,
        send_initial_events: bool = True,
        timeout: Timeout = None,
    ) -> AsyncWatch:
        """See :meth:`sandpod.Client.watch` (``async for`` over the result)."""
        req = _base.watch_request(
            self._settings.ns(namespace), labels, include_pool_members, send_initial_events
        )
        deadline = None if timeout is None else _base.seconds_of(timeout)
        call = self._stub.WatchSandboxes(req, timeout=deadline, metadata=self._metadata)
        return AsyncWatch(call, bounded=deadline is not None, client=self)

    def claim_many(
        self,
        template: str,
        n: int,
        *,
        concurrency: int = 16,
        ttl: Timeout = None,
        shutdown_time: _dt.datetime | None = None,
        shutdown_policy: str | None = None,
        labels: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        namespace: str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> ClaimBatch:
        """Claims ``n`` sandboxes, at most ``concurrency`` at a time, and yields each as
        soon as it is ready::

            async with client.claim_many("python", 64) as batch:
                async for sandbox in batch:
                    ...

        If the caller gives up (an exception or a cancellation leaves the ``async with``)
        every sandbox the batch claimed is deleted, also those already yielded; after a
        normal exit (including ``break``) only the ones never handed out are. A claim
        that fails (after its retries) ends the iteration with its error.
        """
        if n < 0:
            raise ValueError("n must not be negative")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        on_exit = _base.check_on_exit(on_exit)
        ns = self._settings.ns(namespace)

        def make_request() -> sandbox_service_pb2.ClaimSandboxRequest:
            return _base.claim_request(
                template,
                ns,
                ttl=ttl,
                shutdown_time=shutdown_time,
                shutdown_policy=shutdown_policy,
                labels=labels,
                env=env,
                request_id=_base.new_request_id(),
            )

        make_request()  # validate the arguments now, not in n tasks
        return ClaimBatch(self, n, concurrency, make_request, on_exit, timeout)

    # --- snapshots ------------------------------------------------------------------

    async def fork(
        self,
        source: AsyncSnapshot | AsyncSandbox | str,
        n: int,
        *,
        template: str | None = None,
        ttl: Timeout = None,
        shutdown_policy: str | None = None,
        labels: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        namespace: str | None = None,
        request_id: str | None = None,
        wait: bool = True,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncForkList:
        """See :meth:`sandpod.Client.fork`; ``async with`` the result deletes them."""
        on_exit = _base.check_on_exit(on_exit)
        rid = request_id or _base.new_request_id()
        req = fork_request(
            source,
            n,
            self._settings.ns(namespace),
            template=template,
            ttl=ttl,
            shutdown_policy=shutdown_policy,
            labels=labels,
            env=env,
            request_id=rid,
            wait=wait,
        )
        resp = await self._unary(
            "ForkSandbox",
            req,
            timeout=timeout,
            request_id=rid,
            wait_desc=f"sandpod: forking {n} sandboxes" if wait else "",
        )
        return AsyncForkList(
            [self._handle(sb, on_exit, warm=False) for sb in resp.sandboxes],
            AsyncSnapshot(self, SnapshotInfo.from_pb(resp.snapshot)),
        )

    async def snapshots(
        self,
        *,
        labels: Mapping[str, str] | str | None = None,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[AsyncSnapshot]:
        """See :meth:`sandpod.Client.snapshots`."""
        out: list[AsyncSnapshot] = []
        token = ""
        while True:
            req = snapshot_pb2.ListSnapshotsRequest(
                namespace=self._settings.ns(namespace),
                label_selector=label_selector(labels),
                page_size=1000,
                page_token=token,
            )
            resp = await self._unary("ListSnapshots", req, timeout=timeout)
            out.extend(AsyncSnapshot(self, SnapshotInfo.from_pb(s)) for s in resp.snapshots)
            token = resp.next_page_token
            if not token:
                return out

    async def get_snapshot(
        self,
        name: str,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSnapshot:
        """See :meth:`sandpod.Client.get_snapshot`."""
        if not name:
            raise ValueError("name is required")
        req = snapshot_pb2.GetSnapshotRequest(name=name, namespace=self._settings.ns(namespace))
        resp = await self._unary("GetSnapshot", req, timeout=timeout)
        return AsyncSnapshot(self, SnapshotInfo.from_pb(resp.snapshot))

    # --- templates and pools --------------------------------------------------------

    async def templates(
        self,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[Template]:
        """The sandbox templates the server knows."""
        pages = await self._all_pages("ListTemplates", _pb.ListTemplatesRequest, namespace, timeout)
        return [Template.from_pb(t) for page in pages for t in page.templates]

    async def pools(
        self,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[WarmPool]:
        """The warm pools and how many ready sandboxes each holds."""
        pages = await self._all_pages("ListWarmPools", _pb.ListWarmPoolsRequest, namespace, timeout)
        return [WarmPool.from_pb(p) for page in pages for p in page.warm_pools]

    async def _all_pages(
        self,
        method: str,
        request: Any,
        namespace: str | None,
        timeout: Timeout | UseClientDefault,
    ) -> list[Any]:
        """Every page of a paged list call, in order."""
        pages: list[Any] = []
        token = ""
        while True:
            req = request(namespace=self._settings.ns(namespace), page_size=1000, page_token=token)
            resp = await self._unary(method, req, timeout=timeout)
            pages.append(resp)
            token = resp.next_page_token
            if not token:
                return pages

    async def pool(
        self,
        name: str,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> WarmPool:
        """One warm pool."""
        req = _pb.GetWarmPoolRequest(name=name, namespace=self._settings.ns(namespace))
        resp = await self._unary("GetWarmPool", req, timeout=timeout)
        return WarmPool.from_pb(resp.warm_pool)

    async def scale_pool(
        self,
        name: str,
        replicas: int,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> WarmPool:
        """Sets how many ready sandboxes the pool keeps."""
        req = _pb.ScaleWarmPoolRequest(
            name=name, namespace=self._settings.ns(namespace), replicas=replicas
        )
        resp = await self._unary("ScaleWarmPool", req, timeout=timeout)
        return WarmPool.from_pb(resp.warm_pool)


async def _with_wait_bar(call: Any, desc: str) -> Any:
    task = asyncio.ensure_future(call)
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


async def _delete_all(sandboxes: Iterable[AsyncSandbox]) -> None:
    """Best-effort delete of many sandboxes, concurrently; never raises."""
    await asyncio.gather(*(sb._release() for sb in sandboxes), return_exceptions=True)


class AsyncWatch:
    """The async iterator of :class:`WatchEvent` returned by ``AsyncClient.watch``."""

    def __init__(self, call: Any, *, bounded: bool, client: AsyncClient | None = None) -> None:
        self._call = call
        self._bounded = bounded
        self._closed = False
        self._client = client

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        try:
            resp = await self._call.read()
        except grpc.RpcError as err:
            if _watch_ended(err, self._closed, self._bounded):
                raise StopAsyncIteration from None
            client = self._client
            if client is not None and not client._reached and err.code() == _UNAVAILABLE:
                # watch() cannot wait for the connection (it returns at once): say here
                # what the other calls say when there was never a server to talk to.
                raise Unavailable(
                    _base.no_server_message(client.address, 0, err.details() or "unavailable"),
                    code=_UNAVAILABLE,
                ) from None
            raise from_rpc_error(err) from None
        except asyncio.CancelledError:
            if self._closed:
                raise StopAsyncIteration from None
            raise
        if resp is grpc.aio.EOF:
            raise StopAsyncIteration
        return WatchEvent.from_pb(resp)

    def close(self) -> None:
        """Stops the stream."""
        self._closed = True
        self._call.cancel()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ClaimBatch:
    """The sandboxes of one ``AsyncClient.claim_many`` call, yielded as they get ready.

    An async iterator and an async context manager. See :meth:`AsyncClient.claim_many`
    for what is released when.
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
        await _delete_all(sb for sb in self._claimed if id(sb) not in keep)

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


class AsyncSandbox:
    """The asyncio twin of :class:`sandpod.Sandbox`."""

    def __init__(
        self,
        client: AsyncClient,
        info: SandboxInfo,
        *,
        on_exit: OnExit = "delete",
        warm: bool | None = None,
    ) -> None:
        self._client = client
        self.info = info
        self.on_exit: OnExit = on_exit
        self.warm = warm
        self.files = AsyncFiles(self)
        self._deleted = False

    # --- state ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def namespace(self) -> str:
        return self.info.namespace

    @property
    def status(self) -> Phase:
        """The phase as last reported (no call); ``await refresh()`` to update it.
        ``Phase.DELETED`` once the sandbox is known to be gone (see ``deleted``)."""
        return self.info.phase

    @property
    def deleted(self) -> bool:
        """See :attr:`sandpod.Sandbox.deleted`."""
        return self._deleted

    @property
    def labels(self) -> Mapping[str, str]:
        return self.info.labels

    @property
    def shutdown_time(self) -> _dt.datetime | None:
        return self.info.shutdown_time

    @property
    def agent_restarts(self) -> int:
        """Restarts of the agent after it died or hung, as last reported (no call)."""
        return self.info.agent_restarts

    def __repr__(self) -> str:
        return (
            f"AsyncSandbox(name={self.name!r}, template={self.info.template!r}, "
            f"status={self.status})"
        )

    def _repr_html_(self) -> str:
        return sandbox_html(self.info, self.warm)

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.on_exit == "keep" or self._deleted:
            return
        try:
            if self.on_exit == "suspend":
                await asyncio.shield(self.suspend())
            else:
                await asyncio.shield(self.delete())
        except NotFound:  # a delete or suspend can miss only the sandbox
            self._gone("not found when leaving the block")
        except SandpodError as err:
            if exc is None:
                raise
            warnings.warn(f"sandpod: could not {self.on_exit} {self.name}: {err}", stacklevel=2)

    def _ref(self) -> dict[str, str]:
        return {"name": self.name, "namespace": self.namespace}

    def _update(self, pb: Any) -> AsyncSandbox:
        self.info = SandboxInfo.from_pb(pb)
        self._deleted = False  # the server just reported it
        return self

    def _gone(self, why: str) -> None:
        """Marks the handle's sandbox as gone: its repr and HTML say Deleted."""
        self._deleted = True
        self.info = dataclasses.replace(self.info, phase=Phase.DELETED, message=why)

    def _noted(self, err: SandpodError) -> SandpodError:
        """Returns ``err``, marking the sandbox gone first if it says so."""
        if isinstance(err, SandboxNotFound):
            self._gone(err.message)
        return err

    async def _unary(self, method: str, request: Any, **kwargs: Any) -> Any:
        """A unary call about this sandbox (see ``AsyncClient._unary``)."""
        try:
            return await self._client._unary(method, request, **kwargs)
        except SandboxNotFound as err:
            raise self._noted(err) from None

    # --- lifecycle ------------------------------------------------------------------

    async def refresh(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSandbox:
        """Fetches the current state into ``info`` and returns self."""
        resp = await self._unary(
            "GetSandbox", _pb.GetSandboxRequest(**self._ref()), timeout=timeout
        )
        return self._update(resp.sandbox)

    async def suspend(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSandbox:
        """Stops the sandbox's processes; files, name and identity are kept."""
        resp = await self._unary(
            "SuspendSandbox", _pb.SuspendSandboxRequest(**self._ref()), timeout=timeout
        )
        return self._update(resp.sandbox)

    async def resume(
        self, *, wait: bool = True, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSandbox:
        """Starts a suspended (or expired and retained) sandbox again, or thaws a paused
        one: its processes continue where they stopped. Resuming a running sandbox
        changes nothing."""
        resp = await self._unary(
            "ResumeSandbox",
            _pb.ResumeSandboxRequest(no_wait=not wait, **self._ref()),
            timeout=timeout,
            wait_desc=f"sandpod: resuming {self.name}" if wait else "",
        )
        return self._update(resp.sandbox)

    async def pause(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSandbox:
        """Freezes the sandbox's processes with their memory (``status`` becomes
        ``Phase.PAUSED``); :meth:`resume` thaws them where they stopped. While paused,
        exec and file calls raise :class:`FailedPrecondition` with reason
        ``SANDBOX_PAUSED`` (unless the template auto-resumes). Pausing a paused sandbox
        changes nothing; a suspended or unclaimed pool member raises
        :class:`FailedPrecondition`."""
        resp = await self._unary(
            "PauseSandbox", _pb.PauseSandboxRequest(**self._ref()), timeout=timeout
        )
        return self._update(resp.sandbox)

    async def extend(
        self,
        ttl: Timeout = None,
        *,
        shutdown_time: _dt.datetime | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """Moves the shutdown time to now + ``ttl`` (or to ``shutdown_time``)."""
        req = _base.extend_request(self.name, self.namespace, ttl, shutdown_time)
        resp = await self._unary("ExtendSandbox", req, timeout=timeout)
        return self._update(resp.sandbox)

    async def snapshot(
        self,
        name: str | None = None,
        labels: Mapping[str, str] | None = None,
        *,
        request_id: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSnapshot:
        """Saves the sandbox's files (its workspace) as a snapshot, named ``name`` or a
        generated name. The sandbox keeps running; files only, not memory (see
        ``info.memory``). Retries reuse one ``request_id``."""
        rid = request_id or _base.new_request_id()
        req = snapshot_pb2.SnapshotSandboxRequest(
            sandbox=self.name,
            namespace=self.namespace,
            name=name or "",
            labels=dict(labels or {}),
            request_id=rid,
        )
        resp = await self._unary("SnapshotSandbox", req, timeout=timeout, request_id=rid)
        return AsyncSnapshot(self._client, SnapshotInfo.from_pb(resp.snapshot))

    async def restore(
        self,
        snapshot: AsyncSnapshot | str,
        *,
        wait: bool = True,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """Puts the sandbox's files back to ``snapshot``, keeping its name. Running
        processes are stopped and the sandbox starts again on the restored files (a
        suspended one stays suspended); unless ``wait=False`` it returns when running."""
        req = snapshot_pb2.RestoreSandboxRequest(
            snapshot=snapshot_name(snapshot), no_wait=not wait, **self._ref()
        )
        resp = await self._unary(
            "RestoreSandbox",
            req,
            timeout=timeout,
            wait_desc=f"sandpod: restoring {self.name}" if wait else "",
        )
        return self._update(resp.sandbox)

    async def delete(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> None:
        """See :meth:`sandpod.Sandbox.delete`."""
        await self._unary(
            "DeleteSandbox",
            _pb.DeleteSandboxRequest(**self._ref()),
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )
        self._gone("deleted through this handle")

    # --- port previews --------------------------------------------------------------

    async def expose(
        self,
        port: int,
        *,
        protocol: str = "http",
        signed_url_ttl: Timeout = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> ExposedPort:
        """See :meth:`sandpod.Sandbox.expose`."""
        req = _base.expose_request(self.name, self.namespace, port, protocol, signed_url_ttl)
        resp = await self._unary(
            "ExposePort",
            req,
            timeout=timeout,
            idempotent=False,
            wait_desc=f"sandpod: waiting for port {port} of {self.name}",
        )
        return ExposedPort.from_pb(resp.exposed)

    async def unexpose(
        self, port: int, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> None:
        """Closes the preview of ``port``; its URLs stop working."""
        req = preview_pb2.UnexposePortRequest(
            sandbox=self.name, namespace=self.namespace, port=port
        )
        await self._unary("UnexposePort", req, timeout=timeout)

    async def exposed_ports(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> list[ExposedPort]:
        """The ports exposed now (their URLs, unsigned)."""
        req = preview_pb2.ListExposedPortsRequest(sandbox=self.name, namespace=self.namespace)
        resp = await self._unary("ListExposedPorts", req, timeout=timeout)
        return [ExposedPort.from_pb(p) for p in resp.ports]

    async def _release(self) -> None:
        if self._deleted:
            return
        try:
            await self.delete()
        except NotFound:  # a delete can miss only the sandbox
            self._gone("not found when released")
        except SandpodError as err:
            warnings.warn(f"sandpod: could not delete {self.name}: {err}", stacklevel=2)

    async def wait_until_running(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSandbox:
        """See :meth:`sandpod.Sandbox.wait_until_running`."""
        loop = asyncio.get_running_loop()
        limit = self._client._settings.timeout_for(timeout)
        end = None if limit is None else loop.time() + limit
        delay = 0.05
        with WaitBar(self._client._settings.progress, f"sandpod: waiting for {self.name}") as bar:
            while True:
                await self.refresh()
                if self.status == Phase.RUNNING:
                    return self
                if self.status in (Phase.FAILED, Phase.TERMINATING):
                    raise ServerError(f"sandbox {self.name} is {self.status}: {self.info.message}")
                if end is not None and loop.time() + delay > end:
                    raise SandboxTimeout(f"sandbox {self.name} still {self.status} after {limit}s")
                await asyncio.sleep(delay)
                bar.tick()
                delay = min(delay * 2, 1.0)

    # --- commands -------------------------------------------------------------------

    async def run(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: Source | None = None,
        check: bool = False,
        on_output: Callable[[Output], object] | None = None,
        max_output_bytes: int | None = None,
    ) -> CommandResult:
        """See :meth:`sandpod.Sandbox.run`. Never re-run behind your back."""
        limit = self._client._settings.timeout_for(timeout)
        first, text = _base.exec_start(
            self.name,
            self.namespace,
            cmd,
            env=env,
            cwd=cwd,
            timeout=limit,
            max_output_bytes=max_output_bytes,
        )
        await self._client._await_server(_base.exec_deadline(limit))
        call = self._open_exec(limit)
        sender = _ExecSender(call, first)
        decoder = OutputDecoder()
        try:
            if stdin is not None:
                for chunk in _iter_source(stdin):
                    sender.put_stdin(chunk)
            sender.close_stdin()
            while True:
                resp = await call.read()
                if resp is grpc.aio.EOF:
                    raise ServerError(f"exec of {text!r} ended without an exit status")
                sender.on_response(resp)
                if resp.WhichOneof("msg") == "exit":
                    result = decoder.result(resp.exit, text)
                    return result.check() if check else result
                out = decoder.feed_response(resp)
                if out is not None and on_output is not None:
                    on_output(out)
        except grpc.RpcError as err:
            raise self._noted(_exec_error(err, text, limit)) from None
        finally:
            await sender.aclose()
            call.cancel()

    async def start(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: Timeout = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: Source | None = None,
        max_output_bytes: int | None = None,
    ) -> AsyncProcess:
        """See :meth:`sandpod.Sandbox.start`."""
        limit = None if timeout is None else _base.seconds_of(timeout)
        first, text = _base.exec_start(
            self.name,
            self.namespace,
            cmd,
            env=env,
            cwd=cwd,
            timeout=limit,
            max_output_bytes=max_output_bytes,
        )
        await self._client._await_server(_base.exec_deadline(limit))
        call = self._open_exec(limit)
        sender = _ExecSender(call, first)
        try:
            resp = await call.read()
        except grpc.RpcError as err:
            await sender.aclose()
            call.cancel()
            raise self._noted(_exec_error(err, text, limit)) from None
        if resp is grpc.aio.EOF:
            await sender.aclose()
            call.cancel()
            raise ServerError(f"exec of {text!r} ended before it started")
        sender.on_response(resp)
        proc = AsyncProcess(self, call, sender, text, limit, resp)
        if stdin is not None:
            for chunk in _iter_source(stdin):
                await proc.write_stdin(chunk)
            await proc.close_stdin()
        return proc

    async def terminal(
        self,
        cmd: str | Sequence[str] | None = None,
        *,
        rows: int = 24,
        cols: int = 80,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        term: str | None = None,
        timeout: Timeout = None,
        max_output_bytes: int | None = None,
    ) -> AsyncTerminal:
        """See :meth:`sandpod.Sandbox.terminal`."""
        limit = None if timeout is None else _base.seconds_of(timeout)
        first, text = terminal_start(
            self.name,
            self.namespace,
            cmd,
            rows=rows,
            cols=cols,
            env=env,
            cwd=cwd,
            term=term,
            timeout=limit,
            max_output_bytes=max_output_bytes,
        )
        await self._client._await_server(_base.exec_deadline(limit))
        call = self._open_exec(limit)
        sender = _ExecSender(call, first)
        try:
            resp = await call.read()
        except grpc.RpcError as err:
            await sender.aclose()
            call.cancel()
            raise self._noted(_exec_error(err, text, limit)) from None
        if resp is grpc.aio.EOF:
            await sender.aclose()
            call.cancel()
            raise ServerError(f"terminal {text!r} ended before it started")
        sender.on_response(resp)
        return AsyncTerminal(self, call, sender, text, resp)

    # --- code -----------------------------------------------------------------------

    async def run_code(
        self,
        code: str,
        *,
        context: str | AsyncCodeContext | None = None,
        language: str = "python",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
        env: Mapping[str, str] | None = None,
        on_stdout: Callable[[str], object] | None = None,
        on_stderr: Callable[[str], object] | None = None,
        on_result: Callable[[Result], object] | None = None,
    ) -> Execution:
        """See :meth:`sandpod.Sandbox.run_code`. Never re-run behind your back."""
        return await _code_client.run_code_async(
            self, code, context, language, timeout, env, on_stdout, on_stderr, on_result
        )

    async def code_context(
        self,
        context_id: str | None = None,
        *,
        create: bool = True,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        language: str = "python",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncCodeContext:
        """See :meth:`sandpod.Sandbox.code_context`."""
        if not create:
            if not context_id:
                raise ValueError("context_id is required with create=False")
            return AsyncCodeContext(self, context_id, None)
        req = _code_client.create_request(self, context_id, cwd, env, language)
        # Not retried: a retry of a create that went through would make a second one.
        resp = await self._unary("CreateCodeContext", req, timeout=timeout, idempotent=False)
        info = CodeContextInfo.from_pb(resp.context)
        return AsyncCodeContext(self, info.id, info)

    async def code_contexts(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> list[CodeContextInfo]:
        """The sandbox's live code contexts, by id."""
        req = code_pb2.ListCodeContextsRequest(sandbox=self.name, namespace=self.namespace)
        return _code_client.contexts_from(
            await self._unary("ListCodeContexts", req, timeout=timeout)
        )

    def _open_exec(self, limit: float | None) -> Any:
        client = self._client
        return client._stub.Exec(
            timeout=_base.exec_deadline(limit),
            metadata=client._metadata,
            wait_for_ready=True,
        )


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

    async def aclose(self) -> None:
        """Ends sending: the call is over. A write still waiting for the server is
        abandoned (the call is cancelled or done)."""
        self.end()
        if not self._task.done():
            self._task.cancel()
        await asyncio.wait([self._task])

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


def _exec_error(err: grpc.RpcError, text: str, limit: float | None) -> SandpodError:
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and limit is not None:
        return SandboxTimeout(
            f"command {text!r} did not report an exit within {limit + _base.EXEC_GRACE:.3g}s",
            code=err.code(),
        )
    return from_rpc_error(err)


class AsyncProcess:
    """The asyncio twin of :class:`sandpod.Process` (``async for``, ``await wait()``)."""

    def __init__(
        self,
        sandbox: AsyncSandbox,
        call: Any,
        sender: _ExecSender,
        command: str,
        limit: float | None,
        first: exec_pb2.ExecResponse,
    ) -> None:
        self.sandbox = sandbox
        self.command = command
        self._call = call
        self._sender = sender
        self._limit = limit
        self._decoder = OutputDecoder()
        self._events: list[Output] = []
        self._changed = asyncio.Event()
        self._result: CommandResult | None = None
        self._error: SandpodError | None = None
        self._done = False
        self._stdin_closed = False
        self.pid = 0
        if first.WhichOneof("msg") == "started":
            self.pid = first.started.pid
        else:
            self._consume(first)
        self._task = asyncio.create_task(self._read())

    def _consume(self, resp: exec_pb2.ExecResponse) -> None:
        if resp.WhichOneof("msg") == "exit":
            self._result = self._decoder.result(resp.exit, self.command)
            self._done = True
        else:
            out = self._decoder.feed_response(resp)
            if out is not None:
                self._events.append(out)
        self._changed.set()

    async def _read(self) -> None:
        try:
            while not self._done:
                resp = await self._call.read()
                if resp is grpc.aio.EOF:
                    self._error = ServerError(f"exec of {self.command!r} ended without an exit")
                    break
                self._sender.on_response(resp)
                self._consume(resp)
        except grpc.RpcError as err:
            self._error = self.sandbox._noted(_exec_error(err, self.command, self._limit))
        finally:
            self._done = True
            self._changed.set()
            await self._sender.aclose()
            self._call.cancel()

    def __repr__(self) -> str:
        state = "running" if self.running else "exited"
        return f"AsyncProcess(pid={self.pid}, command={self.command!r}, {state})"

    @property
    def running(self) -> bool:
        return not self._done

    @property
    def result(self) -> CommandResult | None:
        """The result once the process exited, else None."""
        return self._result

    @property
    def stdout(self) -> str:
        """Standard output so far."""
        return bytes(self._decoder.buffers["stdout"]).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """Standard error so far."""
        return bytes(self._decoder.buffers["stderr"]).decode("utf-8", "replace")

    async def __aiter__(self) -> AsyncIterator[Output]:
        i = 0
        while True:
            while i < len(self._events):
                i += 1
                yield self._events[i - 1]
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            self._changed.clear()
            await self._changed.wait()

    async def write_stdin(self, data: Data) -> None:
        """See :meth:`sandpod.Process.write_stdin` (never waits for the command)."""
        if self._stdin_closed:
            raise ValueError("stdin is closed")
        if self.running:
            self._sender.put_stdin(_base.as_bytes(data))

    async def close_stdin(self) -> None:
        """Closes the command's standard input (it sees end-of-file)."""
        if not self._stdin_closed:
            self._stdin_closed = True
            self._sender.close_stdin()

    async def send_signal(self, signal: int) -> None:
        """See :meth:`sandpod.Process.send_signal`."""
        if self.running:
            self._sender.signal(signal)

    async def terminate(self) -> None:
        """Sends SIGTERM."""
        await self.send_signal(15)

    async def kill(self) -> None:
        """Sends SIGKILL."""
        await self.send_signal(9)

    async def wait(self, timeout: Timeout = None, *, check: bool = False) -> CommandResult:
        """See :meth:`sandpod.Process.wait`."""
        limit = None if timeout is None else _base.seconds_of(timeout)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), limit)
        except asyncio.TimeoutError:
            raise SandboxTimeout(f"process {self.pid} ({self.command!r}) still running") from None
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result.check() if check else self._result

    async def __aenter__(self) -> AsyncProcess:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.running:
            try:
                await self.kill()
                await asyncio.wait_for(asyncio.shield(self._task), 10)
            except (SandpodError, asyncio.TimeoutError):
                self._call.cancel()


class AsyncFiles:
    """The asyncio twin of :class:`sandpod.Files`."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._sandbox = sandbox

    def _req(self, cls: Any, path: str, **kwargs: Any) -> Any:
        return cls(
            sandbox=self._sandbox.name, namespace=self._sandbox.namespace, path=path, **kwargs
        )

    @property
    def _client(self) -> AsyncClient:
        return self._sandbox._client

    async def read(
        self,
        path: str,
        *,
        offset: int = 0,
        length: int = 0,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> bytes:
        """The file's bytes (from ``offset``, at most ``length`` of them if not 0)."""
        parts = [
            c async for c in self.read_chunks(path, offset=offset, length=length, timeout=timeout)
        ]
        return b"".join(parts)

    async def read_text(
        self,
        path: str,
        *,
        encoding: str = "utf-8",
        errors: str = "strict",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> str:
        """The file decoded as text."""
        return (await self.read(path, timeout=timeout)).decode(encoding, errors)

    async def read_chunks(
        self,
        path: str,
        *,
        offset: int = 0,
        length: int = 0,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncIterator[bytes]:
        """See :meth:`sandpod.Files.read_chunks`."""
        client = self._client
        state = RetryState(client._settings.retry, client._settings.timeout_for(timeout), True)
        await client._await_server(state.remaining())
        got = 0
        while True:
            want = 0 if length == 0 else length - got
            req = self._req(files_pb2.ReadFileRequest, path, offset=offset + got, length=want)
            try:
                call = client._stub.ReadFile(
                    req, timeout=state.attempt_timeout(), metadata=client._metadata
                )
                async for resp in call:
                    got += len(resp.data)
                    yield resp.data
                return
            except grpc.RpcError as err:
                delay = state.next_delay(err.code())
                if delay is None:
                    raise self._sandbox._noted(from_rpc_error(err)) from None
                await asyncio.sleep(delay)

    async def download(
        self,
        path: str,
        dest: str | os.PathLike[str] | IO[bytes],
        *,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> int:
        """Copies the file into a local path or binary file object; returns its size."""
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "wb") as f:
                return await self.download(path, f, timeout=timeout)
        n = 0
        async for chunk in self.read_chunks(path, timeout=timeout):
            dest.write(chunk)
            n += len(chunk)
        return n

    async def write(
        self,
        path: str,
        data: Source,
        *,
        mode: int | None = None,
        make_parents: bool = True,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> FileInfo:
        """See :meth:`sandpod.Files.write`. Never retried."""
        client = self._client
        header = _base.write_header(
            self._sandbox.name, self._sandbox.namespace, path, mode, make_parents
        )

        async def requests() -> AsyncIterator[files_pb2.WriteFileRequest]:
            yield header
            for chunk in _iter_source(data):
                yield files_pb2.WriteFileRequest(data=chunk)

        budget = client._settings.timeout_for(timeout)
        await client._await_server(budget)
        try:
            resp = await client._stub.WriteFile(
                requests(),
                timeout=budget,
                metadata=client._metadata,
                wait_for_ready=True,
            )
        except grpc.RpcError as err:
            raise self._sandbox._noted(from_rpc_error(err)) from None
        return FileInfo.from_pb(resp.file)

    async def upload(
        self,
        src: str | os.PathLike[str],
        path: str,
        *,
        mode: int | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> FileInfo:
        """Copies a local file into the sandbox (keeping its permission bits)."""
        with open(src, "rb") as f:
            perm = mode if mode is not None else os.fstat(f.fileno()).st_mode & 0o7777
            return await self.write(path, f, mode=perm, timeout=timeout)

    async def list(
        self, path: str = "/", *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> list[FileInfo]:
        """See :meth:`sandpod.Files.list`."""
        out: list[FileInfo] = []
        token = ""
        while True:
            req = self._req(files_pb2.ListFilesRequest, path, page_token=token)
            resp = await self._sandbox._unary("ListFiles", req, timeout=timeout)
            out.extend(FileInfo.from_pb(f) for f in resp.files)
            token = resp.next_page_token
            if not token:
                return out

    async def stat(
        self, path: str, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> FileInfo:
        """Information about one file or directory; FileNotFound if it is missing."""
        resp = await self._sandbox._unary(
            "StatFile", self._req(files_pb2.StatFileRequest, path), timeout=timeout
        )
        return FileInfo.from_pb(resp.file)

    async def exists(
        self, path: str, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> bool:
        """Whether the path exists."""
        try:
            await self.stat(path, timeout=timeout)
        except FileNotFound:
            return False
        return True

    async def remove(
        self,
        path: str,
        *,
        recursive: bool = False,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> None:
        """Removes a file (or, with ``recursive=True``, a directory and its contents)."""
        await self._sandbox._unary(
            "RemoveFile",
            self._req(files_pb2.RemoveFileRequest, path, recursive=recursive),
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )

    async def mkdir(
        self,
        path: str,
        *,
        parents: bool = True,
        mode: int | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> FileInfo:
        """See :meth:`sandpod.Files.mkdir`."""
        resp = await self._sandbox._unary(
            "MakeDir",
            self._req(files_pb2.MakeDirRequest, path, parents=parents, mode=mode or 0),
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.ALREADY_EXISTS}),
        )
        if resp is None:
            return await self.stat(path, timeout=timeout)
        return FileInfo.from_pb(resp.file)

    def watch(
        self, path: str = ".", *, recursive: bool = False, timeout: Timeout = None
    ) -> AsyncFileWatch:
        """See :meth:`sandpod.Files.watch`: ``async for ev in sb.files.watch(...)``, or
        ``w = await sb.files.watch(...)`` (or ``async with``) to wait until it is ready."""
        client = self._client
        deadline = None if timeout is None else _base.seconds_of(timeout)
        req = self._req(files_pb2.WatchFilesRequest, path, recursive=recursive)

        async def opener() -> Any:
            await client._await_server(deadline)
            return client._stub.WatchFiles(req, timeout=deadline, metadata=client._metadata)

        return AsyncFileWatch(self._sandbox, opener, bounded=deadline is not None)


async def _why_unreachable(channel: grpc.aio.Channel) -> str | None:
    """See :meth:`sandpod.Client._why_unreachable`."""
    check = channel.unary_unary(_base.HEALTH_CHECK)
    try:
        await check(b"", timeout=1.0)
    except grpc.RpcError as err:
        if err.code() in (_UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return err.details() or err.code().name.lower()
    return None
