import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecRequest(_message.Message):
    __slots__ = ("start", "stdin", "close_stdin", "signal", "resize")
    START_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    CLOSE_STDIN_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    RESIZE_FIELD_NUMBER: _ClassVar[int]
    start: ExecStart
    stdin: bytes
    close_stdin: bool
    signal: int
    resize: TerminalSize
    def __init__(self, start: _Optional[_Union[ExecStart, _Mapping]] = ..., stdin: _Optional[bytes] = ..., close_stdin: _Optional[bool] = ..., signal: _Optional[int] = ..., resize: _Optional[_Union[TerminalSize, _Mapping]] = ...) -> None: ...

class TerminalSize(_message.Message):
    __slots__ = ("rows", "cols")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    rows: int
    cols: int
    def __init__(self, rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class PtyRequest(_message.Message):
    __slots__ = ("size", "term")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    size: TerminalSize
    term: str
    def __init__(self, size: _Optional[_Union[TerminalSize, _Mapping]] = ..., term: _Optional[str] = ...) -> None: ...

class ExecStart(_message.Message):
    __slots__ = ("sandbox", "namespace", "argv", "shell", "env", "working_dir", "timeout", "max_output_bytes", "pty")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    PTY_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    shell: str
    env: _containers.ScalarMap[str, str]
    working_dir: str
    timeout: _duration_pb2.Duration
    max_output_bytes: int
    pty: PtyRequest
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., shell: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ..., working_dir: _Optional[str] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_output_bytes: _Optional[int] = ..., pty: _Optional[_Union[PtyRequest, _Mapping]] = ...) -> None: ...

class ExecResponse(_message.Message):
    __slots__ = ("started", "stdout", "stderr", "exit", "stdin_acked")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    STDIN_ACKED_FIELD_NUMBER: _ClassVar[int]
    started: ExecStarted
    stdout: bytes
    stderr: bytes
    exit: ExitStatus
    stdin_acked: int
    def __init__(self, started: _Optional[_Union[ExecStarted, _Mapping]] = ..., stdout: _Optional[bytes] = ..., stderr: _Optional[bytes] = ..., exit: _Optional[_Union[ExitStatus, _Mapping]] = ..., stdin_acked: _Optional[int] = ...) -> None: ...

class ExecStarted(_message.Message):
    __slots__ = ("pid", "stdin_window")
    PID_FIELD_NUMBER: _ClassVar[int]
    STDIN_WINDOW_FIELD_NUMBER: _ClassVar[int]
    pid: int
    stdin_window: int
    def __init__(self, pid: _Optional[int] = ..., stdin_window: _Optional[int] = ...) -> None: ...

class ExitStatus(_message.Message):
    __slots__ = ("exit_code", "signal", "timed_out", "duration", "stdout_truncated", "stderr_truncated")
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDERR_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    signal: int
    timed_out: bool
    duration: _duration_pb2.Duration
    stdout_truncated: bool
    stderr_truncated: bool
    def __init__(self, exit_code: _Optional[int] = ..., signal: _Optional[int] = ..., timed_out: _Optional[bool] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., stdout_truncated: _Optional[bool] = ..., stderr_truncated: _Optional[bool] = ...) -> None: ...
