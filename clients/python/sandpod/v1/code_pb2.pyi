import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunCodeRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "code", "language", "context_id", "timeout", "env")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    code: str
    language: str
    context_id: str
    timeout: _duration_pb2.Duration
    env: _containers.ScalarMap[str, str]
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., code: _Optional[str] = ..., language: _Optional[str] = ..., context_id: _Optional[str] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., env: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RunCodeResponse(_message.Message):
    __slots__ = ("stdout", "stderr", "result", "error", "done")
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    stdout: bytes
    stderr: bytes
    result: CodeResult
    error: CodeError
    done: CodeDone
    def __init__(self, stdout: _Optional[bytes] = ..., stderr: _Optional[bytes] = ..., result: _Optional[_Union[CodeResult, _Mapping]] = ..., error: _Optional[_Union[CodeError, _Mapping]] = ..., done: _Optional[_Union[CodeDone, _Mapping]] = ...) -> None: ...

class CodeResult(_message.Message):
    __slots__ = ("data", "is_main_result", "truncated")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    DATA_FIELD_NUMBER: _ClassVar[int]
    IS_MAIN_RESULT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    data: _containers.ScalarMap[str, bytes]
    is_main_result: bool
    truncated: bool
    def __init__(self, data: _Optional[_Mapping[str, bytes]] = ..., is_main_result: _Optional[bool] = ..., truncated: _Optional[bool] = ...) -> None: ...

class CodeError(_message.Message):
    __slots__ = ("name", "value", "traceback")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    traceback: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., traceback: _Optional[str] = ...) -> None: ...

class CodeDone(_message.Message):
    __slots__ = ("context_id", "execution_count", "duration", "timed_out", "context_lost", "stdout_truncated", "stderr_truncated")
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_LOST_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDERR_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    context_id: str
    execution_count: int
    duration: _duration_pb2.Duration
    timed_out: bool
    context_lost: bool
    stdout_truncated: bool
    stderr_truncated: bool
    def __init__(self, context_id: _Optional[str] = ..., execution_count: _Optional[int] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., timed_out: _Optional[bool] = ..., context_lost: _Optional[bool] = ..., stdout_truncated: _Optional[bool] = ..., stderr_truncated: _Optional[bool] = ...) -> None: ...

class CodeContext(_message.Message):
    __slots__ = ("id", "language", "cwd", "create_time", "execution_count", "busy")
    ID_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    id: str
    language: str
    cwd: str
    create_time: _timestamp_pb2.Timestamp
    execution_count: int
    busy: bool
    def __init__(self, id: _Optional[str] = ..., language: _Optional[str] = ..., cwd: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., execution_count: _Optional[int] = ..., busy: _Optional[bool] = ...) -> None: ...

class CreateCodeContextRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "language", "cwd", "context_id", "env")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    language: str
    cwd: str
    context_id: str
    env: _containers.ScalarMap[str, str]
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., language: _Optional[str] = ..., cwd: _Optional[str] = ..., context_id: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CreateCodeContextResponse(_message.Message):
    __slots__ = ("context",)
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    context: CodeContext
    def __init__(self, context: _Optional[_Union[CodeContext, _Mapping]] = ...) -> None: ...

class ListCodeContextsRequest(_message.Message):
    __slots__ = ("sandbox", "namespace")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class ListCodeContextsResponse(_message.Message):
    __slots__ = ("contexts",)
    CONTEXTS_FIELD_NUMBER: _ClassVar[int]
    contexts: _containers.RepeatedCompositeFieldContainer[CodeContext]
    def __init__(self, contexts: _Optional[_Iterable[_Union[CodeContext, _Mapping]]] = ...) -> None: ...

class DeleteCodeContextRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "context_id")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    context_id: str
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., context_id: _Optional[str] = ...) -> None: ...

class DeleteCodeContextResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
