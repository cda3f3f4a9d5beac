"""What the synchronous client does differently from the asyncio one: threads and
blocking gRPC calls where :mod:`sandpod._async_io` has tasks and ``grpc.aio``.

:mod:`sandpod._client` is generated from :mod:`sandpod._async_client` by
``hack/unasync.py``, which only drops ``async``/``await`` and renames; whatever cannot be
written once for both (the channel, stream reading, exec senders, claim_many, opening
watches, and the condition and worker that the handles written once in ``_process``,
``_terminal``, ``_watch`` and ``_filewatch`` use) lives here, with the same names as in
:mod:`sandpod._async_io`. Hand-written.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from . import _base
from ._base import OnExit, Timeout, UseClientDefault
from ._errors import ServerError, Unavailable
from ._models import CommandResult, Output, OutputDecoder
from ._progress import CountBar, WaitBar
from .v1 import exec_pb2, sandbox_service_pb2, sandbox_service_pb2_grpc

if TYPE_CHECKING:
    from ._client import Client, Sandbox
    from ._filewatch import FileWatch
    from ._process import Process
    from ._terminal import Terminal
    from ._watch import Watch

__all__ = ["Condition", "SandboxList", "Worker"]


def initial_channel(
    settings: _base.ClientSettings,
) -> tuple[grpc.Channel, sandbox_service_pb2_grpc.SandboxServiceStub]:
    """The channel and stub of a new client: opened at once (a sync channel needs no
    event loop)."""
    if settings.credentials is not None:
        channel = grpc.secure_channel(
            settings.address, settings.credentials, options=settings.options
        )
    else:
        channel = grpc.insecure_channel(settings.address, options=settings.options)
    return channel, sandbox_service_pb2_grpc.SandboxServiceStub(channel)


def close_channel(client: Client) -> None:
    client._channel.close()


def await_server(client: Client, budget: float | None) -> None:
    """See :meth:`sandpod.Client._await_server`."""
    limit = client._settings.connect_timeout
    if client._reached or limit is None:
        return
    wait = limit if budget is None else min(limit, budget)
    ready = grpc.channel_ready_future(client._channel)
    try:
        ready.result(timeout=wait)
    except grpc.FutureTimeoutError:
        ready.cancel()
        cause = _why_unreachable(client._channel)
        if cause is not None:
            raise Unavailable(
                _base.no_server_message(client.address, wait, cause),
                code=grpc.StatusCode.UNAVAILABLE,
            ) from None
    client._reached = True


def _why_unreachable(channel: grpc.Channel) -> str | None:
    """gRPC's reason why the server cannot be reached (refused, no such host, a TLS
    handshake that failed), from one health check that does not wait for a
    connection; None if the server answered it after all."""
    check = channel.unary_unary(_base.HEALTH_CHECK)
    try:
        check(b"", timeout=1.0)
    except grpc.RpcError as err:
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return err.details() or err.code().name.lower()
    return None


def with_wait_bar(
    callable_: Any, request: Any, timeout: float | None, metadata: Any, desc: str
) -> Any:
    """One unary call, with a progress bar that ticks while it waits."""
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


def delete_all(sandboxes: Iterable[Sandbox]) -> None:
    """Best-effort delete of many sandboxes, in parallel; never raises."""
    items = list(sandboxes)
    if not items:
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
        for fut in [pool.submit(sb._release) for sb in items]:
            fut.exception()


def read(call: Any) -> Any:
    """The next message of a server stream, None at its end (an error status raises;
    so does a call cancelled by us: grpc.RpcError, CANCELLED)."""
    return next(call, None)


def responses(call: Any) -> Iterator[Any]:
    """The messages of a server stream until its end (an error status raises)."""
    return iter(call)


# --- primitives of the handles written once (_terminal, _filewatch) ---------------


class Condition:
    """A threading condition, the twin of :class:`sandpod._async_io.AsyncCondition`."""

    def __init__(self) -> None:
        self._cond = threading.Condition()

    def __enter__(self) -> Condition:
        self._cond.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cond.release()

    def notify_all(self) -> None:
        self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits (holding the lock) for a notify; False if ``timeout`` ran out first."""
        return self._cond.wait(timeout)

    def wait_for(self, predicate: Callable[[], object], timeout: float | None) -> bool:
        """Waits (holding the lock) until ``predicate()`` is true; False if ``timeout``
        ran out first."""
        return bool(self._cond.wait_for(predicate, timeout))


class Worker:
    """Runs a function on a daemon thread of its own: a handle's reader (the twin of
    :class:`sandpod._async_io.AsyncWorker`, which runs a task)."""

    def __init__(self, target: Callable[[], Any], name: str) -> None:
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds for the end; True if it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


# --- watches ------------------------------------------------------------------------


def open_watch(client: Client, req: Any, deadline: float | None) -> Watch:
    """Starts ``Client.watch``; returns once the server has the watch live."""
    from ._watch import Watch  # it uses this module's helpers

    client._await_server(deadline)
    call = client._stub.WatchSandboxes(req, timeout=deadline, metadata=client._metadata)
    call.initial_metadata()  # the server sends its headers once the watch is live
    return Watch(call, bounded=deadline is not None)


def open_file_watch(sandbox: Sandbox, req: Any, deadline: float | None) -> FileWatch:
    """Starts ``Files.watch``; returns once the watch is in place (ready)."""
    from ._filewatch import FileWatch  # it uses this module's helpers

    client = sandbox._client

    def opener() -> Any:
        client._await_server(deadline)
        return client._stub.WatchFiles(req, timeout=deadline, metadata=client._metadata)

    return FileWatch(sandbox, opener, bounded=deadline is not None)._wait_ready()


# --- claim_many ---------------------------------------------------------------------


def claim_many(
    client: Client,
    template: str,
    n: int,
    concurrency: int,
    make_request: Callable[[], sandbox_service_pb2.ClaimSandboxRequest],
    on_exit: OnExit,
    timeout: Timeout | UseClientDefault,
) -> SandboxList:
    """``Client.claim_many``: all claims on a thread pool, all or nothing."""
    got: list[Sandbox] = []
    lock = threading.Lock()
    stop = threading.Event()

    def one() -> Sandbox | None:
        if stop.is_set():
            return None
        sb = client._claim(make_request(), on_exit, timeout, wait_bar=False)
        with lock:
            got.append(sb)
        return sb

    bar = CountBar(client._settings.progress, n, f"sandpod: claiming {template}")
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
        delete_all(got)
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
    return SandboxList(got)


class SandboxList(list):  # type: ignore[type-arg]
    """The sandboxes of one ``Client.claim_many`` call: a list of :class:`Sandbox`
    handles that deletes them all when used as a context manager
    (``with client.claim_many("python", 8) as sandboxes: ...``).

    All or nothing: if any claim fails, or the caller interrupts (Ctrl-C), every
    sandbox already claimed is deleted before the error propagates.
    """

    def delete_all(self) -> None:
        """Deletes every sandbox in the list (in parallel); already gone ones are fine."""
        delete_all(self)

    def __enter__(self) -> SandboxList:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.delete_all()


# --- exec ---------------------------------------------------------------------------


def _open_exec(
    sandbox: Sandbox, first: exec_pb2.ExecRequest, limit: float | None
) -> tuple[Any, _ExecSender]:
    client = sandbox._client
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


def run_exec(
    sandbox: Sandbox,
    first: exec_pb2.ExecRequest,
    text: str,
    limit: float | None,
    stdin: _base.Source | None,
    check: bool,
    on_output: Callable[[Output], object] | None,
) -> CommandResult:
    """``Sandbox.run`` once its request is built: send, read to the exit."""
    call, sender = _open_exec(sandbox, first, limit)
    decoder = OutputDecoder()
    try:
        if stdin is not None:
            for chunk in _base.iter_source(stdin):
                sender.put_stdin(chunk)
        sender.close_stdin()
        for resp in call:
            sender.on_response(resp)
            kind = resp.WhichOneof("msg")
            if kind == "exit":
                result = decoder.result(resp.exit, text)
                sandbox._answered()
                return result.check() if check else result
            out = decoder.feed_response(resp)
            if out is not None and on_output is not None:
                on_output(out)
        raise ServerError(f"exec of {text!r} ended without an exit status")
    except grpc.RpcError as err:
        raise sandbox._noted(_base.exec_error(err, text, limit)) from None
    finally:
        sender.end()
        call.cancel()


def _started(
    sandbox: Sandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None, what: str
) -> tuple[Any, _ExecSender, exec_pb2.ExecResponse]:
    """Opens an exec and reads its first response (``started``, or an early end)."""
    call, sender = _open_exec(sandbox, first, limit)
    try:
        resp = next(call)
    except grpc.RpcError as err:
        sender.end()
        raise sandbox._noted(_base.exec_error(err, text, limit)) from None
    except StopIteration:
        sender.end()
        raise ServerError(f"{what} {text!r} ended before it started") from None
    sender.on_response(resp)
    sandbox._answered()
    return call, sender, resp


def start_process(
    sandbox: Sandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None
) -> Process:
    """``Sandbox.start``."""
    from ._process import Process  # it uses this module's helpers

    call, sender, resp = _started(sandbox, first, text, limit, "exec of")
    return Process(sandbox, call, sender, text, limit, resp)


def start_terminal(
    sandbox: Sandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None
) -> Terminal:
    """``Sandbox.terminal``."""
    from ._terminal import Terminal  # it uses this module's helpers

    call, sender, resp = _started(sandbox, first, text, limit, "terminal")
    return Terminal(sandbox, call, sender, text, resp)


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

    def close(self) -> None:
        """Ends sending: the call is over (gRPC's sending thread stops)."""
        self.end()

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
