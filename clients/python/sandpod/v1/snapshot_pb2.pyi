import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sandpod.v1 import sandbox_pb2 as _sandbox_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SnapshotPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SNAPSHOT_PHASE_UNSPECIFIED: _ClassVar[SnapshotPhase]
    SNAPSHOT_PHASE_PENDING: _ClassVar[SnapshotPhase]
    SNAPSHOT_PHASE_READY: _ClassVar[SnapshotPhase]
    SNAPSHOT_PHASE_FAILED: _ClassVar[SnapshotPhase]

class SnapshotContents(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SNAPSHOT_CONTENTS_UNSPECIFIED: _ClassVar[SnapshotContents]
    SNAPSHOT_CONTENTS_FILES: _ClassVar[SnapshotContents]
    SNAPSHOT_CONTENTS_FILES_AND_MEMORY: _ClassVar[SnapshotContents]
SNAPSHOT_PHASE_UNSPECIFIED: SnapshotPhase
SNAPSHOT_PHASE_PENDING: SnapshotPhase
SNAPSHOT_PHASE_READY: SnapshotPhase
SNAPSHOT_PHASE_FAILED: SnapshotPhase
SNAPSHOT_CONTENTS_UNSPECIFIED: SnapshotContents
SNAPSHOT_CONTENTS_FILES: SnapshotContents
SNAPSHOT_CONTENTS_FILES_AND_MEMORY: SnapshotContents

class Snapshot(_message.Message):
    __slots__ = ("name", "namespace", "uid", "labels", "phase", "message", "source_sandbox", "template", "size_bytes", "file_count", "contents", "volumes", "storage", "create_time", "used_by", "skipped")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SANDBOX_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONTENTS_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    USED_BY_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    labels: _containers.ScalarMap[str, str]
    phase: SnapshotPhase
    message: str
    source_sandbox: str
    template: str
    size_bytes: int
    file_count: int
    contents: SnapshotContents
    volumes: _containers.RepeatedScalarFieldContainer[str]
    storage: str
    create_time: _timestamp_pb2.Timestamp
    used_by: _containers.RepeatedScalarFieldContainer[str]
    skipped: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., phase: _Optional[_Union[SnapshotPhase, str]] = ..., message: _Optional[str] = ..., source_sandbox: _Optional[str] = ..., template: _Optional[str] = ..., size_bytes: _Optional[int] = ..., file_count: _Optional[int] = ..., contents: _Optional[_Union[SnapshotContents, str]] = ..., volumes: _Optional[_Iterable[str]] = ..., storage: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., used_by: _Optional[_Iterable[str]] = ..., skipped: _Optional[_Iterable[str]] = ...) -> None: ...

class SnapshotSandboxRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "name", "labels", "include_memory", "request_id")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_MEMORY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    name: str
    labels: _containers.ScalarMap[str, str]
    include_memory: bool
    request_id: str
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., include_memory: _Optional[bool] = ..., request_id: _Optional[str] = ...) -> None: ...

class SnapshotSandboxResponse(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: Snapshot
    def __init__(self, snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class GetSnapshotRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class GetSnapshotResponse(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: Snapshot
    def __init__(self, snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class ListSnapshotsRequest(_message.Message):
    __slots__ = ("namespace", "label_selector", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    label_selector: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSnapshotsResponse(_message.Message):
    __slots__ = ("snapshots", "next_page_token")
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    snapshots: _containers.RepeatedCompositeFieldContainer[Snapshot]
    next_page_token: str
    def __init__(self, snapshots: _Optional[_Iterable[_Union[Snapshot, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteSnapshotRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class DeleteSnapshotResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ForkSandboxRequest(_message.Message):
    __slots__ = ("namespace", "snapshot", "sandbox", "count", "template", "labels", "env", "ttl", "shutdown_policy", "request_id", "no_wait")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_POLICY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NO_WAIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    snapshot: str
    sandbox: str
    count: int
    template: str
    labels: _containers.ScalarMap[str, str]
    env: _containers.ScalarMap[str, str]
    ttl: _duration_pb2.Duration
    shutdown_policy: _sandbox_pb2.ShutdownPolicy
    request_id: str
    no_wait: bool
    def __init__(self, namespace: _Optional[str] = ..., snapshot: _Optional[str] = ..., sandbox: _Optional[str] = ..., count: _Optional[int] = ..., template: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., env: _Optional[_Mapping[str, str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., shutdown_policy: _Optional[_Union[_sandbox_pb2.ShutdownPolicy, str]] = ..., request_id: _Optional[str] = ..., no_wait: _Optional[bool] = ...) -> None: ...

class ForkSandboxResponse(_message.Message):
    __slots__ = ("sandboxes", "snapshot")
    SANDBOXES_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    sandboxes: _containers.RepeatedCompositeFieldContainer[_sandbox_pb2.Sandbox]
    snapshot: Snapshot
    def __init__(self, sandboxes: _Optional[_Iterable[_Union[_sandbox_pb2.Sandbox, _Mapping]]] = ..., snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class RestoreSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace", "snapshot", "no_wait")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    NO_WAIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    snapshot: str
    no_wait: bool
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., snapshot: _Optional[str] = ..., no_wait: _Optional[bool] = ...) -> None: ...

class RestoreSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...
