"""``run_code`` and code contexts, sync (:class:`CodeContext`) and asyncio
(:class:`AsyncCodeContext`). ``Sandbox.run_code``, ``Sandbox.code_context`` and
``Sandbox.code_contexts`` (and their async twins) call into this module.

A code context is a long-lived python3 in the sandbox that keeps its state between
calls. ``run_code`` is never re-run behind your back: a connection lost while a cell runs
raises :class:`Unavailable` and you decide.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from . import _async_io, _base, _sync_io
from ._base import USE_CLIENT_DEFAULT, Timeout, UseClientDefault
from ._code import CodeContextInfo, Execution, ExecutionDecoder, Result
from ._errors import NotFound, SandboxTimeout, SandpodError, ServerError, from_rpc_error
from .v1 import code_pb2

if TYPE_CHECKING:
    from ._async_client import AsyncSandbox
    from ._client import Sandbox

__all__ = ["AsyncCodeContext", "CodeContext"]

OnText = Callable[[str], object] | None
OnResult = Callable[[Result], object] | None


def _context_id(context: str | CodeContext | AsyncCodeContext | None) -> str:
    if context is None:
        return ""
    if isinstance(context, (CodeContext, AsyncCodeContext)):
        return context.id
    return context


def run_code_request(
    sb: Sandbox | AsyncSandbox,
    code: str,
    context: str | CodeContext | AsyncCodeContext | None,
    language: str,
    limit: float | None,
    env: Mapping[str, str] | None,
) -> code_pb2.RunCodeRequest:
    req = code_pb2.RunCodeRequest(
        sandbox=sb.name,
        namespace=sb.namespace,
        code=code,
        language=language,
        context_id=_context_id(context),
        env=dict(env or {}),
    )
    if limit is not None:
        req.timeout.CopyFrom(_base.to_duration(limit))
    return req


def _code_error(err: grpc.RpcError, limit: float | None) -> SandpodError:
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and limit is not None:
        return SandboxTimeout(
            f"run_code did not finish within {limit + _base.EXEC_GRACE:.3g}s "
            "(its timeout, the interrupt and the kill all ran out)",
            code=err.code(),
        )
    return from_rpc_error(err)


def create_request(
    sb: Sandbox | AsyncSandbox,
    context_id: str | None,
    cwd: str | None,
    env: Mapping[str, str] | None,
    language: str,
) -> code_pb2.CreateCodeContextRequest:
    return code_pb2.CreateCodeContextRequest(
        sandbox=sb.name,
        namespace=sb.namespace,
        context_id=context_id or "",
        cwd=cwd or "",
        env=dict(env or {}),
        language=language,
    )


# unasync: begin source: the asyncio twins; the sync ones below are generated


async def run_code_async(
    sb: AsyncSandbox,
    code: str,
    context: str | AsyncCodeContext | None,
    language: str,
    timeout: Timeout | UseClientDefault,
    env: Mapping[str, str] | None,
    on_stdout: OnText,
    on_stderr: OnText,
    on_result: OnResult,
) -> Execution:
    client = sb._client
    limit = client._settings.timeout_for(timeout)
    req = run_code_request(sb, code, context, language, limit, env)
    deadline = _base.exec_deadline(limit)
    await client._await_server(deadline)
    # wait_for_ready: a call made while the server restarts waits for it; the cell is
    # still sent exactly once.
    call = client._stub.RunCode(
        req, timeout=deadline, metadata=client._metadata, wait_for_ready=True
    )
    dec = ExecutionDecoder(on_stdout, on_stderr, on_result)
    try:
        async for resp in _async_io.responses(call):
            if dec.feed(resp):
                await sb._answered()
                return dec.execution
        raise ServerError("run_code ended without its done message")
    except grpc.RpcError as err:
        raise sb._noted(_code_error(err, limit)) from None
    finally:
        call.cancel()  # a callback that raised: the cell is interrupted


class AsyncCodeContext:
    """A code context in a sandbox (from ``Sandbox.code_context``): a python3 that keeps
    its variables and imports between ``run_code`` calls, apart from every other context.
    As a context manager it deletes the context at exit."""

    def __init__(
        self, sandbox: AsyncSandbox, context_id: str, info: CodeContextInfo | None
    ) -> None:
        self.sandbox = sandbox
        self.id = context_id
        #: What the server said when the context was created (None for a handle to an
        #: existing context).
        self.info = info

    def __repr__(self) -> str:
        return f"AsyncCodeContext({self.id!r}, sandbox={self.sandbox.name!r})"

    async def run_code(
        self,
        code: str,
        *,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
        on_stdout: OnText = None,
        on_stderr: OnText = None,
        on_result: OnResult = None,
    ) -> Execution:
        """Runs ``code`` in this context; see :meth:`sandpod.Sandbox.run_code`."""
        return await self.sandbox.run_code(
            code,
            context=self,
            timeout=timeout,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            on_result=on_result,
        )

    async def delete(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> None:
        """Kills the context's interpreter; its state is gone. Raises
        :class:`CodeContextNotFound` if it was already gone."""
        req = code_pb2.DeleteCodeContextRequest(
            sandbox=self.sandbox.name, namespace=self.sandbox.namespace, context_id=self.id
        )
        await self.sandbox._unary(
            "DeleteCodeContext",
            req,
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )

    async def __aenter__(self) -> AsyncCodeContext:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(NotFound):
            await self.delete()


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


def run_code(
    sb: Sandbox,
    code: str,
    context: str | CodeContext | None,
    language: str,
    timeout: Timeout | UseClientDefault,
    env: Mapping[str, str] | None,
    on_stdout: OnText,
    on_stderr: OnText,
    on_result: OnResult,
) -> Execution:
    client = sb._client
    limit = client._settings.timeout_for(timeout)
    req = run_code_request(sb, code, context, language, limit, env)
    deadline = _base.exec_deadline(limit)
    client._await_server(deadline)
    # wait_for_ready: a call made while the server restarts waits for it; the cell is
    # still sent exactly once.
    call = client._stub.RunCode(
        req, timeout=deadline, metadata=client._metadata, wait_for_ready=True
    )
    dec = ExecutionDecoder(on_stdout, on_stderr, on_result)
    try:
        for resp in _sync_io.responses(call):
            if dec.feed(resp):
                sb._answered()
                return dec.execution
        raise ServerError("run_code ended without its done message")
    except grpc.RpcError as err:
        raise sb._noted(_code_error(err, limit)) from None
    finally:
        call.cancel()  # a callback that raised: the cell is interrupted


class CodeContext:
    """A code context in a sandbox (from ``Sandbox.code_context``): a python3 that keeps
    its variables and imports between ``run_code`` calls, apart from every other context.
    As a context manager it deletes the context at exit."""

    def __init__(self, sandbox: Sandbox, context_id: str, info: CodeContextInfo | None) -> None:
        self.sandbox = sandbox
        self.id = context_id
        #: What the server said when the context was created (None for a handle to an
        #: existing context).
        self.info = info

    def __repr__(self) -> str:
        return f"CodeContext({self.id!r}, sandbox={self.sandbox.name!r})"

    def run_code(
        self,
        code: str,
        *,
        timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
        on_stdout: OnText = None,
        on_stderr: OnText = None,
        on_result: OnResult = None,
    ) -> Execution:
        """Runs ``code`` in this context; see :meth:`sandpod.Sandbox.run_code`."""
        return self.sandbox.run_code(
            code,
            context=self,
            timeout=timeout,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            on_result=on_result,
        )

    def delete(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> None:
        """Kills the context's interpreter; its state is gone. Raises
        :class:`CodeContextNotFound` if it was already gone."""
        req = code_pb2.DeleteCodeContextRequest(
            sandbox=self.sandbox.name, namespace=self.sandbox.namespace, context_id=self.id
        )
        self.sandbox._unary(
            "DeleteCodeContext",
            req,
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )

    def __enter__(self) -> CodeContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(NotFound):
            self.delete()


# unasync: end generated


def contexts_from(resp: Any) -> list[CodeContextInfo]:
    return [CodeContextInfo.from_pb(c) for c in resp.contexts]
