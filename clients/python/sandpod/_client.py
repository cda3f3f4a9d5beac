"""The synchronous client: :class:`Client`, :class:`Sandbox`, :class:`Files`, :class:`Process`.

:mod:`sandpod._async_client` is its asyncio twin, with the same names and parameters
(a test keeps the two signatures equal). Everything that does no I/O is in
:mod:`sandpod._base`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as _dt
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import IO, Any

import grpc

from . import _base, _code_client
from ._base import USE_CLIENT_DEFAULT, ClientSettings, OnExit, Timeout, UseClientDefault
from ._code import CodeContextInfo, Execution, Result
from ._code_client import CodeContext
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
from ._filewatch import FileWatch
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
from ._snapshots import ForkList, Snapshot, SnapshotInfo, fork_request, snapshot_name
from ._terminal import Terminal, terminal_start
from .v1 import (
    code_pb2,
    exec_pb2,
    files_pb2,
    preview_pb2,
    sandbox_service_pb2,
    sandbox_service_pb2_grpc,
    snapshot_pb2,
)

__all__ = ["Client", "Files", "Process", "Sandbox", "SandboxList", "Watch"]

_pb = sandbox_service_pb2
Data = bytes | bytearray | memoryview | str
Source = Data | IO[bytes] | IO[str] | Iterable[bytes]


class Client:
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
        s = self._settings
        if s.credentials is not None:
            self._channel = grpc.secure_channel(s.address, s.credentials, options=s.options)
        else:
            self._channel = grpc.insecure_channel(s.address, options=s.options)
        self._stub = sandbox_service_pb2_grpc.SandboxServiceStub(self._channel)
        self._metadata = s.metadata()
        self._closed = False
        #: Whether the channel has been connected once (see _await_server).
        self._reached = False

    # --- plumbing -------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._settings.address

    @property
    def namespace(self) -> str:
        return self._settings.namespace

    def close(self) -> None:
        """Closes the channel. Sandboxes live on: reconnect with ``get(name)``."""
        if not self._closed:
            self._closed = True
            self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client(address={self.address!r}, namespace={self.namespace!r})"

    def _await_server(self, budget: float | None) -> None:
        """Until the client has reached its server once, waits at most
        ``connect_timeout`` (and the call's ``budget``) for a connection, then raises
        Unavailable naming the address: a server that is not running, or a wrong
        address, fails in seconds instead of after a whole deadline of retries. Once
        the channel has been connected, this does nothing: a lost connection is then a
        server restart, which the calls' retries ride out."""
        limit = self._settings.connect_timeout
        if self._reached or limit is None:
            return
        wait = limit if budget is None else min(limit, budget)
        ready = grpc.channel_ready_future(self._channel)
        try:
            ready.result(timeout=wait)
        except grpc.FutureTimeoutError:
            ready.cancel()
            cause = self._why_unreachable()
            if cause is not None:
                raise Unavailable(
                    _base.no_server_message(self.address, wait, cause),
                    code=grpc.StatusCode.UNAVAILABLE,
                ) from None
        self._reached = True

    def _why_unreachable(self) -> str | None:
        """gRPC's reason why the server cannot be reached (refused, no such host, a TLS
        handshake that failed), from one health check that does not wait for a
        connection; None if the server answered it after all."""
        check = self._channel.unary_unary(_base.HEALTH_CHECK)
        try:
            check(b"", timeout=1.0)
        except grpc.RpcError as err:
            if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                return err.details() or err.code().name.lower()
        return None

    def _unary(
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
        self._await_server(state.remaining())
        callable_ = getattr(self._stub, method)
        while True:
            attempt_timeout = state.attempt_timeout()
            try:
                if wait_desc and self._settings.progress:
                    return _with_wait_bar(
                        callable_, request, attempt_timeout, self._metadata, wait_desc
                    )
                return callable_(request, timeout=attempt_timeout, metadata=self._metadata)
            except grpc.RpcError as err:
                code = err.code()
                if state.attempts > 1 and code in done_on_retry:
                    return None
                delay = state.next_delay(code)
                if delay is None:
                    raise from_rpc_error(err, request_id=request_id) from None
                time.sleep(delay)

    def _handle(self, pb: Any, on_exit: OnExit, warm: bool | None = None) -> Sandbox:
        return Sandbox(self, SandboxInfo.from_pb(pb), on_exit=on_exit, warm=warm)

    # --- lifecycle ------------------------------------------------------------------

    def claim(
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
        snapshot: Snapshot | str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Sandbox:
        """Claims a ready sandbox from the template's warm pool (or starts one cold).

        Retries reuse one ``request_id`` (a fresh uuid4 unless given), so a retried claim
        never hands out a second sandbox. ``on_exit`` says what leaving a ``with`` block
        does: ``"delete"``, ``"suspend"`` or ``"keep"``.
        """
        on_exit = _base.check_on_exit(on_exit)
        rid = request_id or _base.new_request_id()
        req = _base.claim_request(
            template,
            self._settings.ns(namespace),
            ttl=ttl,
            shutdown_time=shutdown_time,
            shutdown_policy=shutdown_policy,
            labels=labels,
            env=env,
            request_id=rid,
            snapshot=snapshot_name(snapshot),
        )
        return self._claim(req, on_exit, timeout, wait_bar=True)

    def _claim(
        self,
        req: sandbox_service_pb2.ClaimSandboxRequest,
        on_exit: OnExit,
        timeout: Timeout | UseClientDefault,
        *,
        wait_bar: bool,
    ) -> Sandbox:
        resp = self._unary(
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

    def create(
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
        snapshot: Snapshot | str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Sandbox:
        """Creates a sandbox cold (not from a pool) and, unless ``wait=False``, waits
        until it runs. Retries reuse one ``request_id``."""
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
        resp = self._unary(
            "CreateSandbox",
            req,
            timeout=timeout,
            backpressure=True,
            request_id=rid,
            wait_desc=f"sandpod: starting a {template} sandbox" if wait else "",
        )
        return self._handle(resp.sandbox, on_exit, warm=False)

    def get(
        self,
        name: str,
        *,
        namespace: str | None = None,
        on_exit: OnExit = "delete",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Sandbox:
        """A handle to an existing sandbox, e.g. after a kernel restart."""
        if not name:
            raise ValueError("name is required")
        on_exit = _base.check_on_exit(on_exit)
        req = _pb.GetSandboxRequest(name=name, namespace=self._settings.ns(namespace))
        resp = self._unary("GetSandbox", req, timeout=timeout)
        return self._handle(resp.sandbox, on_exit)

    def list(
        self,
        *,
        labels: Mapping[str, str] | str | None = None,
        namespace: str | None = None,
        include_pool_members: bool = False,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[Sandbox]:
        """All sandboxes (every page) whose labels match ``labels`` (a dict, all of which
        must match, or a Kubernetes selector string such as ``"team=rl,run!=3"``)."""
        out: list[Sandbox] = []
        token = ""
        while True:
            req = _base.list_request(
                self._settings.ns(namespace), labels, include_pool_members, token
            )
            resp = self._unary("ListSandboxes", req, timeout=timeout)
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
    ) -> Watch:
        """Streams changes to sandboxes as they happen: an ADDED event for each existing
        one first (unless ``send_initial_events=False``), then ADDED, MODIFIED and
        DELETED. It returns once the watch is live, so a change made after it returns
        is in the stream; iterate it, and ``close()`` it (or use it as a context
        manager) to stop. It ends by itself after ``timeout`` seconds."""
        req = _base.watch_request(
            self._settings.ns(namespace), labels, include_pool_members, send_initial_events
        )
        deadline = None if timeout is None else _base.seconds_of(timeout)
        self._await_server(deadline)
        call = self._stub.WatchSandboxes(req, timeout=deadline, metadata=self._metadata)
        call.initial_metadata()  # the server sends its headers once the watch is live
        return Watch(call, bounded=deadline is not None)

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
    ) -> SandboxList:
        """Claims ``n`` sandboxes, at most ``concurrency`` at a time.

        All or nothing: if any claim fails, or the caller interrupts (Ctrl-C), every
        sandbox already claimed is deleted before the error propagates. The result is a
        list that, used as a context manager, deletes them all at exit.
        """
        if n < 0:
            raise ValueError("n must not be negative")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        on_exit = _base.check_on_exit(on_exit)
        got: list[Sandbox] = []
        lock = threading.Lock()
        stop = threading.Event()

        def one() -> Sandbox | None:
            if stop.is_set():
                return None
            req = _base.claim_request(
                template,
                self._settings.ns(namespace),
                ttl=ttl,
                shutdown_time=shutdown_time,
                shutdown_policy=shutdown_policy,
                labels=labels,
                env=env,
                request_id=_base.new_request_id(),
            )
            sb = self._claim(req, on_exit, timeout, wait_bar=False)
            with lock:
                got.append(sb)
            return sb

        bar = CountBar(self._settings.progress, n, f"sandpod: claiming {template}")
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=min(concurrency, max(n, 1)), thread_name_prefix="sandpod-claim"
        )
        try:
            futures = [pool.submit(one) for _ in range(n)]
            for fut in concurrent.futures.as_completed(futures):
                fut.result()
                bar.update()
        except BaseException:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)  # in-flight claims finish first
            bar.close()
            _delete_all(got)
            raise
        finally:
            pool.shutdown(wait=True)
            bar.close()
        return SandboxList(got)

    # --- snapshots ------------------------------------------------------------------

    def fork(
        self,
        source: Snapshot | Sandbox | str,
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
    ) -> ForkList:
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
        resp = self._unary(
            "ForkSandbox",
            req,
            timeout=timeout,
            request_id=rid,
            wait_desc=f"sandpod: forking {n} sandboxes" if wait else "",
        )
        return ForkList(
            [self._handle(sb, on_exit, warm=False) for sb in resp.sandboxes],
            Snapshot(self, SnapshotInfo.from_pb(resp.snapshot)),
        )

    def snapshots(
        self,
        *,
        labels: Mapping[str, str] | str | None = None,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[Snapshot]:
        """All snapshots (every page) whose labels match ``labels``."""
        out: list[Snapshot] = []
        token = ""
        while True:
            req = snapshot_pb2.ListSnapshotsRequest(
                namespace=self._settings.ns(namespace),
                label_selector=label_selector(labels),
                page_size=1000,
                page_token=token,
            )
            resp = self._unary("ListSnapshots", req, timeout=timeout)
            out.extend(Snapshot(self, SnapshotInfo.from_pb(s)) for s in resp.snapshots)
            token = resp.next_page_token
            if not token:
                return out

    def get_snapshot(
        self,
        name: str,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Snapshot:
        """A handle to an existing snapshot."""
        if not name:
            raise ValueError("name is required")
        req = snapshot_pb2.GetSnapshotRequest(name=name, namespace=self._settings.ns(namespace))
        resp = self._unary("GetSnapshot", req, timeout=timeout)
        return Snapshot(self, SnapshotInfo.from_pb(resp.snapshot))

    # --- templates and pools --------------------------------------------------------

    def templates(
        self,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[Template]:
        """The sandbox templates the server knows."""
        pages = self._all_pages("ListTemplates", _pb.ListTemplatesRequest, namespace, timeout)
        return [Template.from_pb(t) for page in pages for t in page.templates]

    def pools(
        self,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> list[WarmPool]:
        """The warm pools and how many ready sandboxes each holds."""
        pages = self._all_pages("ListWarmPools", _pb.ListWarmPoolsRequest, namespace, timeout)
        return [WarmPool.from_pb(p) for page in pages for p in page.warm_pools]

    def _all_pages(
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
            resp = self._unary(method, req, timeout=timeout)
            pages.append(resp)
            token = resp.next_page_token
            if not token:
                return pages

    def pool(
        self,
        name: str,
        *,
        namespace: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> WarmPool:
        """One warm pool."""
        req = _pb.GetWarmPoolRequest(name=name, namespace=self._settings.ns(namespace))
        return WarmPool.from_pb(self._unary("GetWarmPool", req, timeout=timeout).warm_pool)

    def scale_pool(
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
        return WarmPool.from_pb(self._unary("ScaleWarmPool", req, timeout=timeout).warm_pool)


def _with_wait_bar(
    callable_: Any, request: Any, timeout: float | None, metadata: Any, desc: str
) -> Any:
    fut = callable_.future(request, timeout=timeout, metadata=metadata)
    try:
        with WaitBar(True, desc) as bar:
            while True:
                try:
                    return fut.result(timeout=0.2)
                except grpc.FutureTimeoutError:
                    bar.tick()
    except BaseException:
        fut.cancel()
        raise


def _delete_all(sandboxes: Iterable[Sandbox]) -> None:
    """Best-effort delete of many sandboxes, in parallel; never raises."""
    items = list(sandboxes)
    if not items:
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
        for fut in [pool.submit(sb._release) for sb in items]:
            fut.exception()


class Watch:
    """The iterator of :class:`WatchEvent` returned by ``Client.watch``."""

    def __init__(self, call: Any, *, bounded: bool) -> None:
        self._call = call
        self._bounded = bounded
        self._closed = False

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> WatchEvent:
        try:
            return WatchEvent.from_pb(next(self._call))
        except grpc.RpcError as err:
            if _watch_ended(err, self._closed, self._bounded):
                raise StopIteration from None
            raise from_rpc_error(err) from None

    def close(self) -> None:
        """Stops the stream."""
        self._closed = True
        self._call.cancel()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _watch_ended(err: grpc.RpcError, closed: bool, bounded: bool) -> bool:
    code = err.code()
    return (closed and code == grpc.StatusCode.CANCELLED) or (
        bounded and code == grpc.StatusCode.DEADLINE_EXCEEDED
    )


class SandboxList(list):  # type: ignore[type-arg]
    """A list of :class:`Sandbox` handles that deletes them all when used as a context
    manager (``with client.claim_many("python", 8) as sandboxes: ...``)."""

    def delete_all(self) -> None:
        """Deletes every sandbox in the list (in parallel); already gone ones are fine."""
        _delete_all(self)

    def __enter__(self) -> SandboxList:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.delete_all()


class Sandbox:
    """A handle to one sandbox. Cheap: it holds a name and the last known state.

    Use it as a context manager to delete it at the end (or suspend it, or keep it: see
    ``on_exit``). ``info`` is the state as last reported; ``refresh()`` asks again.
    """

    def __init__(
        self,
        client: Client,
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
        self.files = Files(self)
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
        """The phase as last reported (no call); ``refresh()`` to update it.
        ``Phase.DELETED`` once the sandbox is known to be gone (see ``deleted``)."""
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
        return f"Sandbox(name={self.name!r}, template={self.info.template!r}, status={self.status})"

    def _repr_html_(self) -> str:
        return sandbox_html(self.info, self.warm)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.on_exit == "keep" or self._deleted:
            return
        try:
            if self.on_exit == "suspend":
                self.suspend()
            else:
                self.delete()
        except NotFound:  # a delete or suspend can miss only the sandbox
            self._gone("not found when leaving the block")
        except SandpodError as err:
            if exc is None:
                raise
            warnings.warn(f"sandpod: could not {self.on_exit} {self.name}: {err}", stacklevel=2)

    def _ref(self) -> dict[str, str]:
        return {"name": self.name, "namespace": self.namespace}

    def _update(self, pb: Any) -> Sandbox:
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

    def _unary(self, method: str, request: Any, **kwargs: Any) -> Any:
        """A unary call about this sandbox (see ``Client._unary``)."""
        try:
            return self._client._unary(method, request, **kwargs)
        except SandboxNotFound as err:
            raise self._noted(err) from None

    # --- lifecycle ------------------------------------------------------------------

    def refresh(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> Sandbox:
        """Fetches the current state into ``info`` and returns self."""
        resp = self._unary("GetSandbox", _pb.GetSandboxRequest(**self._ref()), timeout=timeout)
        return self._update(resp.sandbox)

    def suspend(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> Sandbox:
        """Stops the sandbox's processes; files, name and identity are kept."""
        resp = self._unary(
            "SuspendSandbox", _pb.SuspendSandboxRequest(**self._ref()), timeout=timeout
        )
        return self._update(resp.sandbox)

    def resume(
        self, *, wait: bool = True, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> Sandbox:
        """Starts a suspended (or expired and retained) sandbox again, or thaws a paused
        one: its processes continue where they stopped. Resuming a running sandbox
        changes nothing."""
        resp = self._unary(
            "ResumeSandbox",
            _pb.ResumeSandboxRequest(no_wait=not wait, **self._ref()),
            timeout=timeout,
            wait_desc=f"sandpod: resuming {self.name}" if wait else "",
        )
        return self._update(resp.sandbox)

    def pause(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> Sandbox:
        """Freezes the sandbox's processes with their memory (``status`` becomes
        ``Phase.PAUSED``); :meth:`resume` thaws them where they stopped. While paused,
        exec and file calls raise :class:`FailedPrecondition` with reason
        ``SANDBOX_PAUSED`` (unless the template auto-resumes). Pausing a paused sandbox
        changes nothing; a suspended or unclaimed pool member raises
        :class:`FailedPrecondition`."""
        resp = self._unary("PauseSandbox", _pb.PauseSandboxRequest(**self._ref()), timeout=timeout)
        return self._update(resp.sandbox)

    def extend(
        self,
        ttl: Timeout = None,
        *,
        shutdown_time: _dt.datetime | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Sandbox:
        """Moves the shutdown time to now + ``ttl`` (or to ``shutdown_time``)."""
        req = _base.extend_request(self.name, self.namespace, ttl, shutdown_time)
        return self._update(self._unary("ExtendSandbox", req, timeout=timeout).sandbox)

    def snapshot(
        self,
        name: str | None = None,
        labels: Mapping[str, str] | None = None,
        *,
        request_id: str | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Snapshot:
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
        resp = self._unary("SnapshotSandbox", req, timeout=timeout, request_id=rid)
        return Snapshot(self._client, SnapshotInfo.from_pb(resp.snapshot))

    def restore(
        self,
        snapshot: Snapshot | str,
        *,
        wait: bool = True,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Sandbox:
        """Puts the sandbox's files back to ``snapshot``, keeping its name. Running
        processes are stopped and the sandbox starts again on the restored files (a
        suspended one stays suspended); unless ``wait=False`` it returns when running."""
        req = snapshot_pb2.RestoreSandboxRequest(
            snapshot=snapshot_name(snapshot), no_wait=not wait, **self._ref()
        )
        resp = self._unary(
            "RestoreSandbox",
            req,
            timeout=timeout,
            wait_desc=f"sandpod: restoring {self.name}" if wait else "",
        )
        return self._update(resp.sandbox)

    def delete(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> None:
        """Deletes the sandbox and its files. Raises SandboxNotFound if it was gone
        before the call (a retry that finds it gone counts as success). Either way the
        handle then shows it as deleted (``status`` is ``Phase.DELETED``)."""
        self._unary(
            "DeleteSandbox",
            _pb.DeleteSandboxRequest(**self._ref()),
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )
        self._gone("deleted through this handle")

    # --- port previews --------------------------------------------------------------

    def expose(
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
        resp = self._unary(
            "ExposePort",
            req,
            timeout=timeout,
            idempotent=False,
            wait_desc=f"sandpod: waiting for port {port} of {self.name}",
        )
        return ExposedPort.from_pb(resp.exposed)

    def unexpose(
        self, port: int, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> None:
        """Closes the preview of ``port``; its URLs stop working."""
        req = preview_pb2.UnexposePortRequest(
            sandbox=self.name, namespace=self.namespace, port=port
        )
        self._unary("UnexposePort", req, timeout=timeout)

    def exposed_ports(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> list[ExposedPort]:
        """The ports exposed now (their URLs, unsigned)."""
        req = preview_pb2.ListExposedPortsRequest(sandbox=self.name, namespace=self.namespace)
        resp = self._unary("ListExposedPorts", req, timeout=timeout)
        return [ExposedPort.from_pb(p) for p in resp.ports]

    def _release(self) -> None:
        if self._deleted:
            return
        try:
            self.delete()
        except NotFound:  # a delete can miss only the sandbox
            self._gone("not found when released")
        except SandpodError as err:
            warnings.warn(f"sandpod: could not delete {self.name}: {err}", stacklevel=2)

    def wait_until_running(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> Sandbox:
        """Polls until the sandbox runs (after ``create(wait=False)`` or ``resume(wait=False)``).
        Raises SandboxTimeout when the deadline passes and ServerError if it failed."""
        limit = self._client._settings.timeout_for(timeout)
        end = None if limit is None else time.monotonic() + limit
        delay = 0.05
        with WaitBar(self._client._settings.progress, f"sandpod: waiting for {self.name}") as bar:
            while True:
                self.refresh()
                if self.status == Phase.RUNNING:
                    return self
                if self.status in (Phase.FAILED, Phase.TERMINATING):
                    raise ServerError(f"sandbox {self.name} is {self.status}: {self.info.message}")
                if end is not None and time.monotonic() + delay > end:
                    raise SandboxTimeout(f"sandbox {self.name} still {self.status} after {limit}s")
                time.sleep(delay)
                bar.tick()
                delay = min(delay * 2, 1.0)

    # --- commands -------------------------------------------------------------------

    def run(
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
        call, sender = self._open_exec(first, limit)
        decoder = OutputDecoder()
        try:
            if stdin is not None:
                for chunk in _iter_source(stdin):
                    sender.put_stdin(chunk)
            sender.close_stdin()
            for resp in call:
                sender.on_response(resp)
                kind = resp.WhichOneof("msg")
                if kind == "exit":
                    result = decoder.result(resp.exit, text)
                    return result.check() if check else result
                out = decoder.feed_response(resp)
                if out is not None and on_output is not None:
                    on_output(out)
            raise ServerError(f"exec of {text!r} ended without an exit status")
        except grpc.RpcError as err:
            raise self._noted(_exec_error(err, text, limit)) from None
        finally:
            sender.end()
            call.cancel()

    def start(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: Timeout = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: Source | None = None,
        max_output_bytes: int | None = None,
    ) -> Process:
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
        call, sender = self._open_exec(first, limit)
        proc = Process(self, call, sender, text, limit)
        if stdin is not None:
            for chunk in _iter_source(stdin):
                proc.write_stdin(chunk)
            proc.close_stdin()
        return proc

    def terminal(
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
    ) -> Terminal:
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
        call, sender = self._open_exec(first, limit)
        return Terminal(self, call, sender, text)

    def _open_exec(
        self, first: exec_pb2.ExecRequest, limit: float | None
    ) -> tuple[Any, _ExecSender]:
        client = self._client
        client._await_server(_base.exec_deadline(limit))
        sender = _ExecSender(first)
        # wait_for_ready: a call made while the server restarts waits for it instead of
        # failing; the command is still sent exactly once.
        call = client._stub.Exec(
            iter(sender),
            timeout=_base.exec_deadline(limit),
            metadata=client._metadata,
            wait_for_ready=True,
        )
        return call, sender

    # --- code -----------------------------------------------------------------------

    def run_code(
        self,
        code: str,
        *,
        context: str | CodeContext | None = None,
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
        return _code_client.run_code(
            self, code, context, language, timeout, env, on_stdout, on_stderr, on_result
        )

    def code_context(
        self,
        context_id: str | None = None,
        *,
        create: bool = True,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        language: str = "python",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> CodeContext:
        """Starts a new code context (an id is generated unless ``context_id`` is given)
        and returns its handle; ``create=False`` returns a handle to an existing one
        without a call. At most 8 per sandbox (:class:`ResourceExhausted`)."""
        if not create:
            if not context_id:
                raise ValueError("context_id is required with create=False")
            return CodeContext(self, context_id, None)
        req = _code_client.create_request(self, context_id, cwd, env, language)
        # Not retried: a retry of a create that went through would make a second one.
        resp = self._unary("CreateCodeContext", req, timeout=timeout, idempotent=False)
        info = CodeContextInfo.from_pb(resp.context)
        return CodeContext(self, info.id, info)

    def code_contexts(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> list[CodeContextInfo]:
        """The sandbox's live code contexts, by id."""
        req = code_pb2.ListCodeContextsRequest(sandbox=self.name, namespace=self.namespace)
        return _code_client.contexts_from(self._unary("ListCodeContexts", req, timeout=timeout))


class _ExecSender:
    """The request stream of one exec: gRPC's sending thread iterates it, the caller's
    threads queue stdin and signals, and whoever reads the responses passes them to
    ``on_response`` (the stdin window and its acknowledgements, see ExecInput)."""

    def __init__(self, first: exec_pb2.ExecRequest) -> None:
        self._input = _base.ExecInput(first)
        self._cond = threading.Condition()

    def put_stdin(self, data: bytes) -> None:
        with self._cond:
            self._input.put_stdin(data)
            self._cond.notify_all()

    def close_stdin(self) -> None:
        with self._cond:
            self._input.close_stdin()
            self._cond.notify_all()

    def signal(self, signal: int) -> None:
        with self._cond:
            self._input.signal(signal)
            self._cond.notify_all()

    def resize(self, size: exec_pb2.TerminalSize) -> None:
        with self._cond:
            self._input.resize(size)
            self._cond.notify_all()

    def end(self) -> None:
        with self._cond:
            self._input.end()
            self._cond.notify_all()

    def on_response(self, resp: exec_pb2.ExecResponse) -> None:
        with self._cond:
            if self._input.on_response(resp):
                self._cond.notify_all()

    def __iter__(self) -> Iterator[exec_pb2.ExecRequest]:
        while True:
            with self._cond:
                msg = self._input.pop()
                while msg is None:
                    if self._input.ended:
                        return
                    self._cond.wait()
                    msg = self._input.pop()
            yield msg


def _iter_source(source: Source, size: int = _base.CHUNK_SIZE) -> Iterator[bytes]:
    """Chunks of bytes from bytes, text, a (binary or text) file object or an iterable."""
    if isinstance(source, (bytes, bytearray, memoryview, str)):
        data = _base.as_bytes(source)
        for i in range(0, len(data), size):
            yield data[i : i + size]
        return
    read = getattr(source, "read", None)
    if callable(read):
        while True:
            chunk = read(size)
            if not chunk:
                return
            yield _base.as_bytes(chunk)
    else:
        for chunk in source:  # type: ignore[union-attr]
            if chunk:
                yield _base.as_bytes(chunk)


def _exec_error(err: grpc.RpcError, text: str, limit: float | None) -> SandpodError:
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and limit is not None:
        return SandboxTimeout(
            f"command {text!r} did not report an exit within {limit + _base.EXEC_GRACE:.3g}s",
            code=err.code(),
        )
    return from_rpc_error(err)


class Process:
    """A command running in a sandbox (from ``Sandbox.start``).

    Iterating yields its :class:`Output` chunks as they arrive (also after it exited,
    from the beginning); ``wait()`` returns the :class:`CommandResult`. As a context
    manager it kills the command at exit if it is still running.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        call: Any,
        sender: _ExecSender,
        command: str,
        limit: float | None,
    ) -> None:
        self.sandbox = sandbox
        self.command = command
        self._call = call
        self._sender = sender
        self._limit = limit
        self._decoder = OutputDecoder()
        self._events: list[Output] = []
        self._cond = threading.Condition()
        self._result: CommandResult | None = None
        self._error: SandpodError | None = None
        self._done = False
        self._stdin_closed = False
        self.pid = 0
        try:
            first = next(call)
        except grpc.RpcError as err:
            sender.end()
            raise sandbox._noted(_exec_error(err, command, limit)) from None
        except StopIteration:
            sender.end()
            raise ServerError(f"exec of {command!r} ended before it started") from None
        sender.on_response(first)
        if first.WhichOneof("msg") == "started":
            self.pid = first.started.pid
        else:
            self._consume(first)
        self._thread = threading.Thread(
            target=self._read, name=f"sandpod-exec-{sandbox.name}", daemon=True
        )
        self._thread.start()

    def _consume(self, resp: exec_pb2.ExecResponse) -> None:
        kind = resp.WhichOneof("msg")
        with self._cond:
            if kind == "exit":
                self._result = self._decoder.result(resp.exit, self.command)
                self._done = True
            elif kind in ("stdout", "stderr"):
                out = self._decoder.feed_response(resp)
                if out is not None:
                    self._events.append(out)
            self._cond.notify_all()

    def _read(self) -> None:
        try:
            for resp in self._call:
                self._sender.on_response(resp)
                self._consume(resp)
                if self._done:
                    break
            else:
                self._error = ServerError(f"exec of {self.command!r} ended without an exit")
        except grpc.RpcError as err:
            self._error = self.sandbox._noted(_exec_error(err, self.command, self._limit))
        finally:
            self._sender.end()
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def __repr__(self) -> str:
        state = (
            "running"
            if self.running
            else f"exited {self._result.exit_code if self._result else '?'}"
        )
        return f"Process(pid={self.pid}, command={self.command!r}, {state})"

    @property
    def running(self) -> bool:
        with self._cond:
            return not self._done

    @property
    def result(self) -> CommandResult | None:
        """The result once the process exited, else None."""
        return self._result

    @property
    def stdout(self) -> str:
        """Standard output so far."""
        with self._cond:
            return bytes(self._decoder.buffers["stdout"]).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """Standard error so far."""
        with self._cond:
            return bytes(self._decoder.buffers["stderr"]).decode("utf-8", "replace")

    def __iter__(self) -> Iterator[Output]:
        i = 0
        while True:
            with self._cond:
                while i >= len(self._events) and not self._done:
                    self._cond.wait()
                batch = self._events[i:]
                done = self._done
            i += len(batch)
            yield from batch
            if done and i >= len(self._events):
                if self._error is not None:
                    raise self._error
                return

    def write_stdin(self, data: Data) -> None:
        """Sends bytes (or UTF-8 text) to the command's standard input. Never blocks:
        what the command has not read yet beyond the server's stdin window (a few MiB)
        waits in this process's memory."""
        if self._stdin_closed:
            raise ValueError("stdin is closed")
        self._sender.put_stdin(_base.as_bytes(data))

    def close_stdin(self) -> None:
        """Closes the command's standard input (it sees end-of-file)."""
        if not self._stdin_closed:
            self._stdin_closed = True
            self._sender.close_stdin()

    def send_signal(self, signal: int) -> None:
        """Sends a signal to the command's whole process group, at once: ahead of any
        stdin the command has not read."""
        if self.running:
            self._sender.signal(signal)

    def terminate(self) -> None:
        """Sends SIGTERM."""
        self.send_signal(15)

    def kill(self) -> None:
        """Sends SIGKILL."""
        self.send_signal(9)

    def wait(self, timeout: Timeout = None, *, check: bool = False) -> CommandResult:
        """Waits for the exit and returns the result; raises SandboxTimeout if ``timeout``
        runs out first (the process keeps running)."""
        limit = None if timeout is None else _base.seconds_of(timeout)
        self._thread.join(limit)
        if self._thread.is_alive():
            raise SandboxTimeout(f"process {self.pid} ({self.command!r}) still running")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result.check() if check else self._result

    def __enter__(self) -> Process:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.running:
            self.kill()
            self._thread.join(10)
            if self._thread.is_alive():
                self._call.cancel()


class Files:
    """The files of a sandbox; paths are relative to its root (``/`` means the root)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    def _req(self, cls: Any, path: str, **kwargs: Any) -> Any:
        return cls(
            sandbox=self._sandbox.name, namespace=self._sandbox.namespace, path=path, **kwargs
        )

    @property
    def _client(self) -> Client:
        return self._sandbox._client

    def read(
        self,
        path: str,
        *,
        offset: int = 0,
        length: int = 0,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> bytes:
        """The file's bytes (from ``offset``, at most ``length`` of them if not 0)."""
        return b"".join(self.read_chunks(path, offset=offset, length=length, timeout=timeout))

    def read_text(
        self,
        path: str,
        *,
        encoding: str = "utf-8",
        errors: str = "strict",
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> str:
        """The file decoded as text."""
        return self.read(path, timeout=timeout).decode(encoding, errors)

    def read_chunks(
        self,
        path: str,
        *,
        offset: int = 0,
        length: int = 0,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> Iterator[bytes]:
        """Yields the file in chunks of up to 1 MiB, without holding it all in memory.
        A transient failure resumes where the stream broke off."""
        client = self._client
        state = RetryState(client._settings.retry, client._settings.timeout_for(timeout), True)
        client._await_server(state.remaining())
        got = 0
        while True:
            want = 0 if length == 0 else length - got
            req = self._req(files_pb2.ReadFileRequest, path, offset=offset + got, length=want)
            try:
                for resp in client._stub.ReadFile(
                    req, timeout=state.attempt_timeout(), metadata=client._metadata
                ):
                    got += len(resp.data)
                    yield resp.data
                return
            except grpc.RpcError as err:
                delay = state.next_delay(err.code())
                if delay is None:
                    raise self._sandbox._noted(from_rpc_error(err)) from None
                time.sleep(delay)

    def download(
        self,
        path: str,
        dest: str | os.PathLike[str] | IO[bytes],
        *,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> int:
        """Copies the file into a local path or binary file object; returns its size."""
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "wb") as f:
                return self.download(path, f, timeout=timeout)
        n = 0
        for chunk in self.read_chunks(path, timeout=timeout):
            dest.write(chunk)
            n += len(chunk)
        return n

    def write(
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

        def requests() -> Iterator[files_pb2.WriteFileRequest]:
            yield header
            for chunk in _iter_source(data):
                yield files_pb2.WriteFileRequest(data=chunk)

        budget = client._settings.timeout_for(timeout)
        client._await_server(budget)
        try:
            resp = client._stub.WriteFile(
                requests(),
                timeout=budget,
                metadata=client._metadata,
                wait_for_ready=True,
            )
        except grpc.RpcError as err:
            raise self._sandbox._noted(from_rpc_error(err)) from None
        return FileInfo.from_pb(resp.file)

    def upload(
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
            return self.write(path, f, mode=perm, timeout=timeout)

    def list(
        self, path: str = "/", *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> list[FileInfo]:
        """The entries of a directory, sorted by name: all of them, fetched page by page
        (``timeout`` applies to each page)."""
        out: list[FileInfo] = []
        token = ""
        while True:
            req = self._req(files_pb2.ListFilesRequest, path, page_token=token)
            resp = self._sandbox._unary("ListFiles", req, timeout=timeout)
            out.extend(FileInfo.from_pb(f) for f in resp.files)
            token = resp.next_page_token
            if not token:
                return out

    def stat(
        self, path: str, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> FileInfo:
        """Information about one file or directory; FileNotFound if it is missing."""
        resp = self._sandbox._unary(
            "StatFile", self._req(files_pb2.StatFileRequest, path), timeout=timeout
        )
        return FileInfo.from_pb(resp.file)

    def exists(
        self, path: str, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> bool:
        """Whether the path exists (a missing sandbox raises SandboxNotFound)."""
        try:
            self.stat(path, timeout=timeout)
        except FileNotFound:
            return False
        return True

    def remove(
        self,
        path: str,
        *,
        recursive: bool = False,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> None:
        """Removes a file (or, with ``recursive=True``, a directory and its contents)."""
        self._sandbox._unary(
            "RemoveFile",
            self._req(files_pb2.RemoveFileRequest, path, recursive=recursive),
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )

    def mkdir(
        self,
        path: str,
        *,
        parents: bool = True,
        mode: int | None = None,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> FileInfo:
        """Creates a directory (and, by default, its missing parents; then an existing
        directory is fine)."""
        resp = self._sandbox._unary(
            "MakeDir",
            self._req(files_pb2.MakeDirRequest, path, parents=parents, mode=mode or 0),
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.ALREADY_EXISTS}),
        )
        if resp is None:  # an earlier attempt made it
            return self.stat(path, timeout=timeout)
        return FileInfo.from_pb(resp.file)

    def watch(
        self, path: str = ".", *, recursive: bool = False, timeout: Timeout = None
    ) -> FileWatch:
        """Watches a directory (``recursive``: its whole tree, directories made later
        included) and returns a :class:`FileWatch` of :class:`FileEvent` (``.type``,
        ``.path``, ``.old_path``). It returns once the watch is in place, so every change
        made after it returns is reported. Iterate it; ``close()`` it (or use it as a
        context manager) to stop; it ends by itself after ``timeout`` seconds. A missing
        directory raises FileNotFound, a file InvalidArgument."""
        client = self._client
        deadline = None if timeout is None else _base.seconds_of(timeout)
        client._await_server(deadline)
        req = self._req(files_pb2.WatchFilesRequest, path, recursive=recursive)
        call = client._stub.WatchFiles(req, timeout=deadline, metadata=client._metadata)
        return FileWatch(self._sandbox, call, bounded=deadline is not None)
