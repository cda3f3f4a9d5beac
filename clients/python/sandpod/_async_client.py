"""The client: :class:`AsyncClient`, :class:`AsyncSandbox` and :class:`AsyncFiles`.

Written once for both flavours: this asyncio file is the source, and
``hack/unasync.py`` generates the synchronous :mod:`sandpod._client` from it (it drops
``async`` and ``await`` and maps the names; ``make generate``). What the two flavours do
differently in kind is hand-written twice, with the same names in each twin: the
primitives (the channel, reading streams, exec senders, tasks against threads) in
:mod:`sandpod._async_io`, a leaf; the operations that open handles or touch the
client's state (waiting for the server, watches, exec, ``claim_many``) in
:mod:`sandpod._async_ops`, above the handles. Everything that does no I/O is in
:mod:`sandpod._base`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import os
import time
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any

import grpc
import grpc.aio

from . import _async_io as _io
from . import _async_ops as _ops
from . import _base, _code_client
from ._async_ops import ClaimBatch
from ._base import USE_CLIENT_DEFAULT, ClientSettings, OnExit, Source, Timeout, UseClientDefault
from ._code import CodeContextInfo, Execution, Result
from ._code_client import AsyncCodeContext
from ._errors import (
    FileNotFound,
    NotFound,
    ResourceExhausted,
    SandboxNotFound,
    SandboxTimeout,
    SandpodError,
    ServerError,
    from_rpc_error,
)
from ._filewatch import AsyncFileWatch
from ._lease import AsyncLeaseRenewer
from ._models import (
    CommandResult,
    ExposedPort,
    FileInfo,
    Output,
    Phase,
    SandboxInfo,
    Template,
    WarmPool,
    label_selector,
    sandbox_html,
)
from ._process import AsyncProcess
from ._progress import WaitBar
from ._retry import RetryPolicy, RetryState
from ._snapshots import AsyncForkList, AsyncSnapshot, SnapshotInfo, fork_request, snapshot_name
from ._terminal import AsyncTerminal, terminal_start
from ._watch import AsyncWatch
from .v1 import (
    code_pb2,
    files_pb2,
    lease_pb2,
    preview_pb2,
    sandbox_service_pb2,
    sandbox_service_pb2_grpc,
    snapshot_pb2,
)

__all__ = ["AsyncClient", "AsyncFiles", "AsyncProcess", "AsyncSandbox", "AsyncWatch", "ClaimBatch"]

_pb = sandbox_service_pb2
Data = bytes | bytearray | memoryview | str


class AsyncClient:
    """A connection to a sandpod server.

    Args:
        address: ``host:port`` of the server; ``SANDPOD_ADDRESS`` or ``127.0.0.1:50051``.
        token: bearer token; ``SANDPOD_TOKEN`` when not given.
        tls: ``True`` for TLS with the system roots, or ``grpc.ChannelCredentials``.
        namespace: default namespace of every call (``SANDPOD_NAMESPACE`` or ``default``).
        timeout: default deadline in seconds of every call, retries included, and the
            default timeout of ``Sandbox.run``. ``None`` means no deadline.
        retry: how transient failures are retried (see :class:`RetryPolicy`).
        progress: tqdm progress bars on long waits; ``None`` means on in a notebook or a
            terminal only.
        keepalive: seconds of silence on an open call before a keepalive ping (0: off).
            The default, 5 minutes, is what a gRPC server accepts by default; ping more
            often only if the server's keepalive enforcement policy allows it.
        channel_options: extra gRPC channel options, applied last.
        connect_timeout: until the client has reached its server once, how long a call
            waits for a connection before it raises :class:`Unavailable` naming the
            address (a server that is not running, a wrong address). Once connected,
            calls ride out a server restart with retries until their own deadline.
            ``None``: wait like any call, until its deadline.
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
        # The async flavour opens its channel on first use (_stub), inside the event loop.
        self._channel: grpc.aio.Channel | None
        self._stub_: sandbox_service_pb2_grpc.SandboxServiceStub | None
        self._channel, self._stub_ = _io.initial_channel(self._settings)
        self._closed = False
        #: Whether the channel has been connected once (see _await_server).
        self._reached = False
        #: Renews the leases of open handles (sandpod._lease).
        self._leases = AsyncLeaseRenewer(self)

    # --- plumbing -------------------------------------------------------------------

    # unasync: async-only
    @property
    def _stub(self) -> sandbox_service_pb2_grpc.SandboxServiceStub:
        if self._stub_ is None:
            if self._closed:
                raise RuntimeError("the client is closed")
            self._channel, self._stub_ = _io.open_channel(self._settings)
        return self._stub_

    # unasync: end

    @property
    def address(self) -> str:
        return self._settings.address

    @property
    def namespace(self) -> str:
        return self._settings.namespace

    async def close(self) -> None:
        """Closes the channel. Sandboxes live on: reconnect with ``get(name)``."""
        if not self._closed:
            self._closed = True
            await self._leases.close()
            await _ops.close_channel(self)

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
        """Until the client has reached its server once, waits at most
        ``connect_timeout`` (and the call's ``budget``) for a connection, then raises
        Unavailable naming the address: a server that is not running, or a wrong
        address, fails in seconds instead of after a whole deadline of retries. Once
        the channel has been connected, this does nothing: a lost connection is then a
        server restart, which the calls' retries ride out."""
        await _ops.await_server(self, budget)

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
        """One unary call with retries. ``done_on_retry``: codes that mean "an earlier
        attempt already did it" when they answer a retry (NOT_FOUND for a delete)."""
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
                if wait_desc and self._settings.progress:
                    return await _io.with_wait_bar(
                        callable_, request, attempt_timeout, self._metadata, wait_desc
                    )
                return await callable_(request, timeout=attempt_timeout, metadata=self._metadata)
            except grpc.RpcError as err:
                code = err.code()
                if state.attempts > 1 and code in done_on_retry:
                    return None
                delay = state.next_delay(code)
                if delay is None:
                    raise from_rpc_error(err, request_id=request_id) from None
                await asyncio.sleep(delay)

    def _handle(
        self, pb: Any, on_exit: OnExit, warm: bool | None = None, *, renew: bool = True
    ) -> AsyncSandbox:
        """A handle; one with a lease is renewed while it is open (``renew``)."""
        sb = AsyncSandbox(self, SandboxInfo.from_pb(pb), on_exit=on_exit, warm=warm)
        if renew and sb.info.lease > 0:
            self._leases.add(sb)
        return sb

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
        restart_on_failure: bool | None = None,
        lease: Timeout = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """Claims a ready sandbox from the template's warm pool (or starts one cold).

        Retries reuse one ``request_id`` (a fresh uuid4 unless given), so a retried claim
        never hands out a second sandbox. ``on_exit`` says what leaving a ``with`` block
        does: ``"delete"``, ``"suspend"`` or ``"keep"``. ``restart_on_failure`` replaces
        the sandbox's workload when it exits non-zero (same name and files); ``None``
        keeps the template's default. ``lease`` (seconds or a timedelta, 2 s..24 h; the
        template's default when ``None``): the server reclaims the sandbox when this
        client has not renewed it for that long; the client renews it in the
        background while the handle is open (see docs/python.md#leases).
        """
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
            restart_on_failure=restart_on_failure,
        )
        _base.set_lease(req, lease)
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
        restart_on_failure: bool | None = None,
        lease: Timeout = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncSandbox:
        """Creates a sandbox cold (not from a pool) and, unless ``wait=False``, waits
        until it runs. Retries reuse one ``request_id``. ``restart_on_failure`` and
        ``lease`` as in :meth:`claim`."""
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
            restart_on_failure=restart_on_failure,
        )
        _base.set_lease(req, lease)
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
        """A handle to an existing sandbox, e.g. after a kernel restart."""
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
        """All sandboxes (every page) whose labels match ``labels`` (a dict, all of which
        must match, or a Kubernetes selector string such as ``"team=rl,run!=3"``)."""
        out: list[AsyncSandbox] = []
        token = ""
        while True:
            req = _base.list_request(
                self._settings.ns(namespace), labels, include_pool_members, token
            )
            resp = await self._unary("ListSandboxes", req, timeout=timeout)
            out.extend(self._handle(sb, "keep", renew=False) for sb in resp.sandboxes)
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
        """Streams changes to sandboxes as they happen: an ADDED event for each existing
        one first (unless ``send_initial_events=False``), then ADDED, MODIFIED and
        DELETED. Iterate the result, and ``close()`` it (or use it as a context
        manager) to stop; it ends by itself after ``timeout`` seconds. The sync flavour
        returns once the watch is live, so a change made after it returns is in the
        stream; the asyncio one returns at once."""
        req = _base.watch_request(
            self._settings.ns(namespace), labels, include_pool_members, send_initial_events
        )
        deadline = None if timeout is None else _base.seconds_of(timeout)
        return _ops.open_watch(self, req, deadline)

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
        lease: Timeout = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> ClaimBatch:
        """Claims ``n`` sandboxes, at most ``concurrency`` at a time, and returns a
        :class:`ClaimBatch` of them (see there which are deleted when: a claim that
        fails, or a caller that gives up, releases what the batch claimed)."""
        if n < 0:
            raise ValueError("n must not be negative")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        on_exit = _base.check_on_exit(on_exit)
        ns = self._settings.ns(namespace)

        def make_request() -> sandbox_service_pb2.ClaimSandboxRequest:
            req = _base.claim_request(
                template,
                ns,
                ttl=ttl,
                shutdown_time=shutdown_time,
                shutdown_policy=shutdown_policy,
                labels=labels,
                env=env,
                request_id=_base.new_request_id(),
            )
            _base.set_lease(req, lease)
            return req

        return _ops.claim_many(self, template, n, concurrency, make_request, on_exit, timeout)

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
        """Makes ``n`` sandboxes (1..256) with the files of ``source``: a snapshot (handle
        or name), or a running sandbox (then a snapshot of it is taken first; it is
        ``result.snapshot`` and stays until deleted). Unless ``wait=False`` it returns
        when all run. Retries reuse one ``request_id``, so a retry makes no extra forks.
        The result, used as a context manager, deletes them all at exit."""
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
        """All snapshots (every page) whose labels match ``labels``."""
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
        """A handle to an existing snapshot."""
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


class AsyncSandbox:
    """A handle to one sandbox. Cheap: it holds a name and the last known state.

    Use it as a context manager to delete it at the end (or suspend it, or keep it: see
    ``on_exit``). ``info`` is the state as last reported, kept current by the handle's
    own calls (see ``status``); ``refresh()`` asks again.
    """

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
        #: True when a claim adopted a ready pool member, False for a cold start,
        #: None when unknown (a handle from get() or list()).
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
        """The phase as last reported (no call), kept true by this handle's own calls:
        every answer that carries the sandbox (lifecycle calls, ``refresh()``) sets
        ``info``; an exec, file, code or preview call that went through while the handle
        last saw the sandbox paused, suspended, expired or starting (the server resumes
        one whose template auto-resumes) fetches ``info`` again, one ``GetSandbox``
        call then only; a refusal that names the phase (reason ``SANDBOX_PAUSED``, ...)
        sets it. Changes made elsewhere (another client, an idle pause) show after
        ``refresh()``. ``Phase.DELETED`` once the sandbox is known to be gone (see
        ``deleted``)."""
        return self.info.phase

    @property
    def deleted(self) -> bool:
        """Whether the sandbox is known to be gone: deleted through this handle, or a call
        through it raised :class:`SandboxNotFound`. No call is made."""
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
        self._client._leases.drop(self)  # leaving the block closes the handle
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
        self._client._leases.drop(self)
        self._deleted = True
        self.info = dataclasses.replace(self.info, phase=Phase.DELETED, message=why)

    def _noted(self, err: SandpodError) -> SandpodError:
        """Returns ``err``, marking the sandbox gone first if it says so, or setting the
        phase a refusal names (``SANDBOX_PAUSED``, ...)."""
        if isinstance(err, SandboxNotFound):
            self._gone(err.message)
        elif (phase := _base.PHASE_OF_REASON.get(err.reason)) is not None:
            self.info = dataclasses.replace(self.info, phase=phase)
        return err

    async def _answered(self) -> None:
        """Called when an exec, file, code or preview call of this sandbox went through:
        the server resumed it first if it was paused or suspended (its template
        auto-resumes) or waited for it to start, so a handle that last saw another phase
        than running fetches the state again. Nothing to do (no call) otherwise."""
        if self._deleted or self.info.phase == Phase.RUNNING:
            return
        try:
            await self.refresh()
        except SandboxNotFound:
            pass  # refresh marked the handle deleted
        except SandpodError:
            # The call that went through is the proof: the sandbox ran when it answered.
            self.info = dataclasses.replace(self.info, phase=Phase.RUNNING)

    async def _failed(self, err: SandpodError) -> SandpodError:
        """``_noted``, and for an error the sandbox's agent answered (a file or code
        context not found): the call reached the sandbox, as in ``_answered``."""
        self._noted(err)
        if err.reason in _base.AGENT_ANSWERS:
            await self._answered()
        return err

    async def _unary(self, method: str, request: Any, **kwargs: Any) -> Any:
        """A unary call about this sandbox (see ``Client._unary``)."""
        try:
            resp = await self._client._unary(method, request, **kwargs)
        except SandpodError as err:
            raise await self._failed(err) from None
        if method in _base.AGENT_CALLS:
            await self._answered()
        return resp

    # --- lifecycle ------------------------------------------------------------------

    async def refresh(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSandbox:
        """Fetches the current state into ``info`` and returns self."""
        resp = await self._unary(
            "GetSandbox", _pb.GetSandboxRequest(**self._ref()), timeout=timeout
        )
        return self._update(resp.sandbox)

    async def renew_lease(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> _dt.datetime | None:
        """Renews the sandbox's lease now and returns when it ends unless renewed again
        (the client does this in the background while the handle is open). Raises
        FailedPrecondition (reason ``NO_LEASE``) for a sandbox without a lease."""
        req = lease_pb2.RenewLeaseRequest(**self._ref())
        resp = await self._unary("RenewLease", req, timeout=timeout)
        when = _base.ts_or_none(resp.lease_expire_time, resp.HasField("lease_expire_time"))
        self.info = dataclasses.replace(self.info, lease_expire_time=when)
        return when

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
        """Deletes the sandbox and its files. Raises SandboxNotFound if it was gone
        before the call (a retry that finds it gone counts as success). Either way the
        handle then shows it as deleted (``status`` is ``Phase.DELETED``)."""
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
        """Serves ``port`` of the sandbox at a preview URL, once something answers on it
        (the call waits up to ``timeout`` for a server that is still starting).

        ``protocol``: ``"http"`` (streaming and WebSockets) or ``"tcp"`` (raw bytes
        after an HTTP upgrade). The result's ``signed_url`` works in a browser until
        ``expires_at`` (``signed_url_ttl``, default one hour). Raises AlreadyExists when
        the port is exposed already; ports close when the sandbox is suspended or
        deleted."""
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
        """Polls until the sandbox runs (after ``create(wait=False)`` or ``resume(wait=False)``).
        Raises SandboxTimeout when the deadline passes and ServerError if it failed."""
        limit = self._client._settings.timeout_for(timeout)
        end = None if limit is None else time.monotonic() + limit
        delay = 0.05
        with WaitBar(self._client._settings.progress, f"sandpod: waiting for {self.name}") as bar:
            while True:
                await self.refresh()
                if self.status == Phase.RUNNING:
                    return self
                if self.status in (Phase.FAILED, Phase.TERMINATING):
                    raise ServerError(f"sandbox {self.name} is {self.status}: {self.info.message}")
                if end is not None and time.monotonic() + delay > end:
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
        """Runs a command and returns its result once it has exited.

        ``cmd`` is a shell command line (run by ``/bin/sh -c``) or an argv list (no
        shell). ``timeout`` (client default: 60 s; ``None`` for none) kills the command's
        whole process group when it runs out: the result then has ``timed_out=True``.
        ``stdin`` (bytes, text, a file object or an iterable of bytes) is fed to the
        command and then closed. ``on_output`` is called with each :class:`Output` chunk
        as it arrives. ``check=True`` raises :class:`CommandFailed` (or
        :class:`CommandTimeout`) unless the command exited with 0.

        A command is never re-run behind your back: if the connection fails while it
        runs, you get :class:`Unavailable` and decide yourself.
        """
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
        return await _ops.run_exec(self, first, text, limit, stdin, check, on_output)

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
        """Starts a command in the background and returns a :class:`Process` handle.

        Iterate over the process to get its :class:`Output` as it comes (the streaming
        form of ``run``); ``wait()`` for its result; ``write_stdin()``, ``close_stdin()``,
        ``kill()``. ``timeout`` defaults to none: the process runs until it exits, is
        killed, or the sandbox ends. ``stdin``, when given, is sent and then closed;
        otherwise stdin stays open for ``write_stdin``.
        """
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
        proc = await _ops.start_process(self, first, text, limit)
        if stdin is not None:
            for chunk in _base.iter_source(stdin):
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
        """Starts a command on a terminal of the sandbox (``cmd`` None: an interactive
        shell, bash if the image has it) and returns a :class:`Terminal` handle: ``send``
        keystrokes, ``resize``, read what it shows (iterate, ``read``, ``expect``),
        ``wait`` for the exit code, ``close``. ``rows`` and ``cols`` are each 1 to 1000;
        ``term`` is TERM (default ``xterm-256color``). ``timeout`` (default none) kills
        the command and everything it started on the terminal when it runs out."""
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
        return await _ops.start_terminal(self, first, text, limit)

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
        """Runs a cell of Python in a code context that keeps its state between calls.

        Without ``context`` it runs in the sandbox's default context (made on first use).
        Returns an :class:`Execution`: ``stdout``, ``stderr``, ``results`` (MIME bundles:
        the last expression's value, ``display()`` calls, matplotlib figures as PNG),
        ``error`` and ``text``. A cell that raises is not an exception here: call
        ``raise_for_error()``. ``timeout`` (client default: 60 s) interrupts the cell
        (``KeyboardInterrupt``; the state is kept). ``on_stdout`` / ``on_stderr`` get
        output as it comes, ``on_result`` each result. ``env`` applies only when the call
        creates the default context. Never re-run behind your back.
        """
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
        """Starts a new code context (an id is generated unless ``context_id`` is given)
        and returns its handle; ``create=False`` returns a handle to an existing one
        without a call. At most 8 per sandbox (:class:`ResourceExhausted`)."""
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


class AsyncFiles:
    """The files of a sandbox; paths are relative to its root (``/`` means the root)."""

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
        max_size: int | None = _base.READ_MAX_SIZE,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> bytes:
        """The file's bytes (from ``offset``, at most ``length`` of them if not 0).

        They are all held in memory, so a file (or ``length``) over ``max_size`` bytes
        (256 MiB by default; ``None``: no bound) raises :class:`ResourceExhausted`
        without more than that having been read: the sandbox's code decides what is in
        the file. :meth:`read_chunks` and :meth:`download` stream files of any size."""
        want = length
        if max_size is not None and (length == 0 or length > max_size):
            want = max_size + 1  # one byte more tells a file over the bound
        parts, n = [], 0
        async for c in self.read_chunks(path, offset=offset, length=want, timeout=timeout):
            n += len(c)
            if max_size is not None and n > max_size:
                raise ResourceExhausted(
                    f"files.read({path!r}): the file has more than max_size={max_size} bytes;"
                    " stream it with read_chunks() or download(), or pass a larger max_size"
                )
            parts.append(c)
        return b"".join(parts)

    async def read_text(
        self,
        path: str,
        *,
        encoding: str = "utf-8",
        errors: str = "strict",
        max_size: int | None = _base.READ_MAX_SIZE,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> str:
        """The file decoded as text (at most ``max_size`` bytes, as :meth:`read`)."""
        return (await self.read(path, max_size=max_size, timeout=timeout)).decode(encoding, errors)

    async def read_chunks(
        self,
        path: str,
        *,
        offset: int = 0,
        length: int = 0,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> AsyncIterator[bytes]:
        """Yields the file in chunks of up to 1 MiB, without holding it all in memory.
        A transient failure resumes where the stream broke off."""
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
                await self._sandbox._answered()
                return
            except grpc.RpcError as err:
                delay = state.next_delay(err.code())
                if delay is None:
                    raise await self._sandbox._failed(from_rpc_error(err)) from None
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
        """Writes a file atomically from bytes, text (UTF-8), a file object (binary or
        text) or an iterable of bytes, streamed in 1 MiB chunks. Never retried (the
        source may not be replayable): on a failure the old file is left as it was."""
        client = self._client
        header = _base.write_header(
            self._sandbox.name, self._sandbox.namespace, path, mode, make_parents
        )

        async def requests() -> AsyncIterator[files_pb2.WriteFileRequest]:
            yield header
            for chunk in _base.iter_source(data):
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
            raise await self._sandbox._failed(from_rpc_error(err)) from None
        await self._sandbox._answered()
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
        """The entries of a directory, sorted by name: all of them, fetched page by page
        (``timeout`` applies to each page)."""
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
        """Whether the path exists (a missing sandbox raises SandboxNotFound)."""
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
        """Creates a directory (and, by default, its missing parents; then an existing
        directory is fine)."""
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
        """Watches a directory (``recursive``: its whole tree, directories made later
        included) and returns a :class:`FileWatch` of :class:`FileEvent` (``.type``,
        ``.path``, ``.old_path``). Every change made once the watch is in place is
        reported: the sync flavour returns then; in asyncio, awaiting the result or
        entering it as a context manager waits for that. Iterate it; ``close()`` it (or
        use it as a context manager) to stop; it ends by itself after ``timeout``
        seconds. A missing directory raises FileNotFound, a file InvalidArgument."""
        deadline = None if timeout is None else _base.seconds_of(timeout)
        req = self._req(files_pb2.WatchFilesRequest, path, recursive=recursive)
        return _ops.open_file_watch(self._sandbox, req, deadline)
