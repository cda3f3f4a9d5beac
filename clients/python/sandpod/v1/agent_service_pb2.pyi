import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sandpod.v1 import code_pb2 as _code_pb2
from sandpod.v1 import exec_pb2 as _exec_pb2
from sandpod.v1 import files_pb2 as _files_pb2
from sandpod.v1 import preview_pb2 as _preview_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SetPausedRequest(_message.Message):
    __slots__ = ("paused",)
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    paused: bool
    def __init__(self, paused: _Optional[bool] = ...) -> None: ...

class SetPausedResponse(_message.Message):
    __slots__ = ("paused", "processes")
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    paused: bool
    processes: int
    def __init__(self, paused: _Optional[bool] = ..., processes: _Optional[int] = ...) -> None: ...

class GetAgentInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetAgentInfoResponse(_message.Message):
    __slots__ = ("sandbox", "version", "root", "start_time", "last_activity_time", "running_execs")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_TIME_FIELD_NUMBER: _ClassVar[int]
    RUNNING_EXECS_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    version: str
    root: str
    start_time: _timestamp_pb2.Timestamp
    last_activity_time: _timestamp_pb2.Timestamp
    running_execs: int
    def __init__(self, sandbox: _Optional[str] = ..., version: _Optional[str] = ..., root: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_activity_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., running_execs: _Optional[int] = ...) -> None: ...
