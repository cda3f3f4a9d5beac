"""The sync client's operations that differ in kind from the asyncio ones: waiting for
the server, opening watches, ``claim_many`` (:class:`SandboxList`), and the exec calls
behind ``run``, ``start`` and ``terminal``, with the same names as in
:mod:`sandpod._async_ops`.

Builders: they sit above the handles they open (``_watch``, ``_filewatch``,
``_process``, ``_terminal``) and the primitives of :mod:`sandpod._sync_io`, and below
:mod:`sandpod._client`, which calls them as ``_ops``. Hand-written.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from . import _base
from ._base import OnExit, Timeout, UseClientDefault
from ._errors import ServerError, Unavailable
from ._filewatch import FileWatch
from ._models import CommandResult, Output, OutputDecoder
from ._process import Process
from ._progress import CountBar
from ._sync_io import ExecSender, delete_all, why_unreachable
from ._terminal import Terminal
from ._watch import Watch
from .v1 import exec_pb2, sandbox_service_pb2

if TYPE_CHECKING:
    from ._client import Client, Sandbox

__all__ = ["SandboxList"]


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
        cause = why_unreachable(client._channel)
        if cause is not None:
            raise Unavailable(
                _base.no_server_message(client.address, wait, cause),
                code=grpc.StatusCode.UNAVAILABLE,
            ) from None
    client._reached = True


# --- watches ------------------------------------------------------------------------


def open_watch(client: Client, req: Any, deadline: float | None) -> Watch:
    """Starts ``Client.watch``; returns once the server has the watch live."""
    client._await_server(deadline)
    call = client._stub.WatchSandboxes(req, timeout=deadline, metadata=client._metadata)
    call.initial_metadata()  # the server sends its headers once the watch is live
    return Watch(call, bounded=deadline is not None)


def open_file_watch(sandbox: Sandbox, req: Any, deadline: float | None) -> FileWatch:
    """Starts ``Files.watch``; returns once the watch is in place (ready)."""
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
) -> tuple[Any, ExecSender]:
    client = sandbox._client
    client._await_server(_base.exec_deadline(limit))
    sender = ExecSender(first)
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
) -> tuple[Any, ExecSender, exec_pb2.ExecResponse]:
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
    call, sender, resp = _started(sandbox, first, text, limit, "exec of")
    return Process(sandbox, call, sender, text, limit, resp)


def start_terminal(
    sandbox: Sandbox, first: exec_pb2.ExecRequest, text: str, limit: float | None
) -> Terminal:
    """``Sandbox.terminal``."""
    call, sender, resp = _started(sandbox, first, text, limit, "terminal")
    return Terminal(sandbox, call, sender, text, resp)
