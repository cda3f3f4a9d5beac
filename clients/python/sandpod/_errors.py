"""Exceptions raised by the sandpod client.

Every exception the client raises on purpose derives from :class:`SandpodError`::

    SandpodError
    ├── NotFound               NOT_FOUND (a template, a pool, ...)
    │   ├── SandboxNotFound    NOT_FOUND, reason SANDBOX_NOT_FOUND: the sandbox itself
    │   ├── FileNotFound       NOT_FOUND, reason FILE_NOT_FOUND: a path in the sandbox
    │   └── CodeContextNotFound NOT_FOUND, reason CODE_CONTEXT_NOT_FOUND: a code context
    ├── AlreadyExists          ALREADY_EXISTS
    ├── InvalidArgument        INVALID_ARGUMENT, OUT_OF_RANGE
    ├── FailedPrecondition     FAILED_PRECONDITION
    ├── ResourceExhausted      RESOURCE_EXHAUSTED   (retried for create and claim only)
    ├── Unavailable            UNAVAILABLE, ABORTED (transient: retried)
    ├── SandboxTimeout         DEADLINE_EXCEEDED, or a wait that ran out
    │   └── CommandTimeout     run(..., check=True) whose command hit its timeout
    ├── Unauthenticated        UNAUTHENTICATED
    ├── PermissionDenied       PERMISSION_DENIED
    ├── Cancelled              CANCELLED
    ├── ServerError            INTERNAL, UNKNOWN, DATA_LOSS, UNIMPLEMENTED
    ├── CommandFailed          run(..., check=True) whose command exited non-zero
    │   └── CommandTimeout
    └── CodeRunError           Execution.raise_for_error(): the cell raised
        └── CodeContextLost    ... or its interpreter died (state lost)

gRPC errors are translated in exactly one place, :func:`from_rpc_error`, through the
table :data:`STATUS_TO_ERROR`, refined by the server's ``ErrorInfo`` reason through
:data:`REASON_TO_ERROR`. ``SandboxNotFound`` is raised only when the server says the
sandbox is missing, so catching it to claim a new sandbox never misfires on a missing
file, template or program (a program that is not found is a result with exit code 127).

``CommandFailed``/``CommandTimeout`` live in :mod:`sandpod._models` beside the
``CommandResult`` they carry, ``CodeRunError``/``CodeContextLost`` in :mod:`sandpod._code`
beside the ``Execution``: a result raises the error that holds it, so this module, which
imports no other module of the package, stays the root of the layers.
"""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

__all__ = [
    "REASON_TO_ERROR",
    "STATUS_TO_ERROR",
    "AlreadyExists",
    "Cancelled",
    "CodeContextNotFound",
    "FailedPrecondition",
    "FileNotFound",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "SandboxNotFound",
    "SandboxTimeout",
    "SandpodError",
    "ServerError",
    "SnapshotInUse",
    "SnapshotNotFound",
    "Unauthenticated",
    "Unavailable",
    "from_rpc_error",
]


class SandpodError(Exception):
    """The root of every error raised by the sandpod client.

    Attributes:
        message: the server's message (or the client's, for client-side errors).
        code: the gRPC status code, or ``None`` for errors raised by the client itself.
        reason: the stable ``ErrorInfo.reason`` word the server attached, if any.
        request_id: the idempotency key of the create or claim that failed, if any;
            retrying with the same ``request_id`` can never produce a second sandbox.
    """

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode | None = None,
        reason: str = "",
        request_id: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.request_id = request_id

    def __str__(self) -> str:
        text = self.message
        if self.code is not None:
            text = f"{text} ({self.code.name})"
        if self.request_id:
            text = f"{text} [request_id={self.request_id}]"
        return text


class NotFound(SandpodError):
    """Something the call names does not exist: a template, a warm pool, the sandbox of
    a request id since deleted, or (the subclasses) the sandbox or a file in it."""


class SandboxNotFound(NotFound):
    """The sandbox the call names does not exist: it never did, was deleted, or is being
    deleted (the server's reason ``SANDBOX_NOT_FOUND``). Nothing else raises it, so it is
    safe to claim a new sandbox on it."""


class FileNotFound(NotFound):
    """A path a file call names (or its parent, for a write) does not exist in the
    sandbox, which does (the server's reason ``FILE_NOT_FOUND``)."""


class CodeContextNotFound(NotFound):
    """The code context a call names does not exist: never created, deleted, or its
    interpreter died (the server's reason ``CODE_CONTEXT_NOT_FOUND``)."""


class SnapshotNotFound(NotFound):
    """The snapshot the call names does not exist (the server's reason
    ``SNAPSHOT_NOT_FOUND``)."""


class AlreadyExists(SandpodError):
    """A sandbox with that name (or a file or directory at that path) already exists."""


class InvalidArgument(SandpodError):
    """The request was refused as invalid; the message names the field."""


class FailedPrecondition(SandpodError):
    """The sandbox is not in a state that allows the call (e.g. suspended, no auto-resume)."""


class SnapshotInUse(FailedPrecondition):
    """A snapshot cannot be deleted while sandboxes layered on it or warm pools that name
    it exist (the server's reason ``SNAPSHOT_IN_USE``; the message names them)."""


class ResourceExhausted(SandpodError):
    """A limit or quota was hit. A create or claim is retried with backoff until the
    call's deadline (the server's back-pressure); anything else (a file call, an exec,
    a message over the size limit) raises it at once, with the server's message."""


class Unavailable(SandpodError):
    """The server could not be reached or asked to retry. Retried until the call's deadline."""


class SandboxTimeout(SandpodError):
    """A deadline ran out: a call, a wait for the sandbox to be ready, or a command."""


class Unauthenticated(SandpodError):
    """The server refused the token (set ``token=`` or ``SANDPOD_TOKEN``)."""


class PermissionDenied(SandpodError):
    """The caller may not do this (e.g. a path whose symbolic link points out of the root)."""


class Cancelled(SandpodError):
    """The call was cancelled."""


class ServerError(SandpodError):
    """The server failed in an unexpected way (INTERNAL, UNKNOWN, DATA_LOSS, UNIMPLEMENTED)."""


#: The one table from gRPC status codes to exception classes.
STATUS_TO_ERROR: dict[grpc.StatusCode, type[SandpodError]] = {
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.ABORTED: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: SandboxTimeout,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.INTERNAL: ServerError,
    grpc.StatusCode.UNKNOWN: ServerError,
    grpc.StatusCode.DATA_LOSS: ServerError,
    grpc.StatusCode.UNIMPLEMENTED: ServerError,
}

#: ``ErrorInfo`` reasons that narrow the class of their code (each a subclass of it).
REASON_TO_ERROR: dict[str, type[SandpodError]] = {
    "SANDBOX_NOT_FOUND": SandboxNotFound,
    "FILE_NOT_FOUND": FileNotFound,
    "CODE_CONTEXT_NOT_FOUND": CodeContextNotFound,
    "SNAPSHOT_NOT_FOUND": SnapshotNotFound,
    "SNAPSHOT_IN_USE": SnapshotInUse,
}


def from_rpc_error(err: grpc.RpcError, *, request_id: str = "") -> SandpodError:
    """Translates a gRPC error (sync or asyncio) into the matching :class:`SandpodError`."""
    code = _code_of(err)
    message = _details_of(err) or (code.name.lower().replace("_", " ") if code else str(err))
    cls = STATUS_TO_ERROR.get(code, ServerError) if code is not None else ServerError
    reason = error_info_reason(err)
    narrower = REASON_TO_ERROR.get(reason)
    if narrower is not None and issubclass(narrower, cls):
        cls = narrower
    return cls(message, code=code, reason=reason, request_id=request_id)


def _code_of(err: grpc.RpcError) -> grpc.StatusCode | None:
    code = getattr(err, "code", None)
    if callable(code):
        result = code()
        if isinstance(result, grpc.StatusCode):
            return result
    return None


def _details_of(err: grpc.RpcError) -> str:
    details = getattr(err, "details", None)
    if callable(details):
        text = details()
        if isinstance(text, str):
            return text
    return ""


def error_info_reason(err: grpc.RpcError) -> str:
    """Returns the ``google.rpc.ErrorInfo`` reason of a failed call's status, or ``""``.

    The status details travel in the call's trailing metadata; ``grpc_status`` decodes
    them (sync and asyncio errors alike) and checks that they belong to this status.
    """
    try:
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
    except Exception:  # details of another status, unreadable ones, or an aio call
        return ""  # whose trailers are not available: the code stands alone
    if status is None:
        return ""
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return info.reason
    return ""
