"""sandpod: durable, isolated sandboxes for AI agents, notebooks and RL rollouts.

Quick start::

    import sandpod

    with sandpod.Client() as client, client.claim("python") as sandbox:
        print(sandbox.run("python3 -c 'print(6 * 7)'").stdout)

See docs/python.md for the whole API. In IPython or Jupyter, ``%load_ext sandpod`` adds
the ``%%sandbox`` cell magic (see sandpod._magic).
"""

from ._async_client import (
    AsyncClient,
    AsyncFiles,
    AsyncProcess,
    AsyncSandbox,
    AsyncWatch,
    ClaimBatch,
)
from ._base import USE_CLIENT_DEFAULT
from ._client import Client, Files, Process, Sandbox, SandboxList, Watch
from ._code import (
    CodeContextInfo,
    CodeContextLost,
    CodeRunError,
    Execution,
    ExecutionError,
    Result,
)
from ._code_client import AsyncCodeContext, CodeContext
from ._errors import (
    AlreadyExists,
    Cancelled,
    CodeContextNotFound,
    FailedPrecondition,
    FileNotFound,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    SandboxNotFound,
    SandboxTimeout,
    SandpodError,
    ServerError,
    SnapshotInUse,
    SnapshotNotFound,
    Unauthenticated,
    Unavailable,
)
from ._filewatch import AsyncFileWatch, FileEvent, FileEventType, FileWatch
from ._magic import load_ipython_extension, unload_ipython_extension
from ._models import (
    CommandFailed,
    CommandResult,
    CommandTimeout,
    Condition,
    ExposedPort,
    FileInfo,
    Output,
    Phase,
    SandboxInfo,
    ShutdownPolicy,
    Template,
    WarmPool,
    WatchEvent,
)
from ._retry import RetryPolicy
from ._snapshots import AsyncForkList, AsyncSnapshot, ForkList, Snapshot, SnapshotInfo
from ._terminal import AsyncTerminal, Terminal
from ._version import __version__

__all__ = [
    "USE_CLIENT_DEFAULT",
    "AlreadyExists",
    "AsyncClient",
    "AsyncCodeContext",
    "AsyncFileWatch",
    "AsyncFiles",
    "AsyncForkList",
    "AsyncProcess",
    "AsyncSandbox",
    "AsyncSnapshot",
    "AsyncTerminal",
    "AsyncWatch",
    "Cancelled",
    "ClaimBatch",
    "Client",
    "CodeContext",
    "CodeContextInfo",
    "CodeContextLost",
    "CodeContextNotFound",
    "CodeRunError",
    "CommandFailed",
    "CommandResult",
    "CommandTimeout",
    "Condition",
    "Execution",
    "ExecutionError",
    "ExposedPort",
    "FailedPrecondition",
    "FileEvent",
    "FileEventType",
    "FileInfo",
    "FileNotFound",
    "FileWatch",
    "Files",
    "ForkList",
    "InvalidArgument",
    "NotFound",
    "Output",
    "PermissionDenied",
    "Phase",
    "Process",
    "ResourceExhausted",
    "Result",
    "RetryPolicy",
    "Sandbox",
    "SandboxInfo",
    "SandboxList",
    "SandboxNotFound",
    "SandboxTimeout",
    "SandpodError",
    "ServerError",
    "ShutdownPolicy",
    "Snapshot",
    "SnapshotInUse",
    "SnapshotInfo",
    "SnapshotNotFound",
    "Template",
    "Terminal",
    "Unauthenticated",
    "Unavailable",
    "WarmPool",
    "Watch",
    "WatchEvent",
    "__version__",
    "load_ipython_extension",
    "unload_ipython_extension",
]
