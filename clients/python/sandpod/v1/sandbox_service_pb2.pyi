import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sandpod.v1 import code_pb2 as _code_pb2
from sandpod.v1 import exec_pb2 as _exec_pb2
from sandpod.v1 import files_pb2 as _files_pb2
from sandpod.v1 import lease_pb2 as _lease_pb2
from sandpod.v1 import preview_pb2 as _preview_pb2
from sandpod.v1 import sandbox_pb2 as _sandbox_pb2
from sandpod.v1 import snapshot_pb2 as _snapshot_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateSandboxRequest(_message.Message):
    __slots__ = ("template", "namespace", "name", "labels", "env", "ttl", "shutdown_time", "shutdown_policy", "request_id", "no_wait", "snapshot", "restart_on_failure", "lease")
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
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_TIME_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_POLICY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NO_WAIT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    RESTART_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    template: str
    namespace: str
    name: str
    labels: _containers.ScalarMap[str, str]
    env: _containers.ScalarMap[str, str]
    ttl: _duration_pb2.Duration
    shutdown_time: _timestamp_pb2.Timestamp
    shutdown_policy: _sandbox_pb2.ShutdownPolicy
    request_id: str
    no_wait: bool
    snapshot: str
    restart_on_failure: bool
    lease: _duration_pb2.Duration
    def __init__(self, template: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., env: _Optional[_Mapping[str, str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., shutdown_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., shutdown_policy: _Optional[_Union[_sandbox_pb2.ShutdownPolicy, str]] = ..., request_id: _Optional[str] = ..., no_wait: _Optional[bool] = ..., snapshot: _Optional[str] = ..., restart_on_failure: _Optional[bool] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CreateSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class ClaimSandboxRequest(_message.Message):
    __slots__ = ("template", "namespace", "labels", "env", "ttl", "shutdown_time", "shutdown_policy", "request_id", "snapshot", "restart_on_failure", "lease")
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
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_TIME_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_POLICY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    RESTART_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    template: str
    namespace: str
    labels: _containers.ScalarMap[str, str]
    env: _containers.ScalarMap[str, str]
    ttl: _duration_pb2.Duration
    shutdown_time: _timestamp_pb2.Timestamp
    shutdown_policy: _sandbox_pb2.ShutdownPolicy
    request_id: str
    snapshot: str
    restart_on_failure: bool
    lease: _duration_pb2.Duration
    def __init__(self, template: _Optional[str] = ..., namespace: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., env: _Optional[_Mapping[str, str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., shutdown_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., shutdown_policy: _Optional[_Union[_sandbox_pb2.ShutdownPolicy, str]] = ..., request_id: _Optional[str] = ..., snapshot: _Optional[str] = ..., restart_on_failure: _Optional[bool] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ClaimSandboxResponse(_message.Message):
    __slots__ = ("sandbox", "warm")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    WARM_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    warm: bool
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ..., warm: _Optional[bool] = ...) -> None: ...

class GetSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class GetSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class ListSandboxesRequest(_message.Message):
    __slots__ = ("namespace", "label_selector", "page_size", "page_token", "include_pool_members")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_POOL_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    label_selector: str
    page_size: int
    page_token: str
    include_pool_members: bool
    def __init__(self, namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., include_pool_members: _Optional[bool] = ...) -> None: ...

class ListSandboxesResponse(_message.Message):
    __slots__ = ("sandboxes", "next_page_token")
    SANDBOXES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sandboxes: _containers.RepeatedCompositeFieldContainer[_sandbox_pb2.Sandbox]
    next_page_token: str
    def __init__(self, sandboxes: _Optional[_Iterable[_Union[_sandbox_pb2.Sandbox, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchSandboxesRequest(_message.Message):
    __slots__ = ("namespace", "label_selector", "send_initial_events", "include_pool_members")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    SEND_INITIAL_EVENTS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_POOL_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    label_selector: str
    send_initial_events: bool
    include_pool_members: bool
    def __init__(self, namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., send_initial_events: _Optional[bool] = ..., include_pool_members: _Optional[bool] = ...) -> None: ...

class WatchSandboxesResponse(_message.Message):
    __slots__ = ("type", "sandbox")
    class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        EVENT_TYPE_UNSPECIFIED: _ClassVar[WatchSandboxesResponse.EventType]
        EVENT_TYPE_ADDED: _ClassVar[WatchSandboxesResponse.EventType]
        EVENT_TYPE_MODIFIED: _ClassVar[WatchSandboxesResponse.EventType]
        EVENT_TYPE_DELETED: _ClassVar[WatchSandboxesResponse.EventType]
    EVENT_TYPE_UNSPECIFIED: WatchSandboxesResponse.EventType
    EVENT_TYPE_ADDED: WatchSandboxesResponse.EventType
    EVENT_TYPE_MODIFIED: WatchSandboxesResponse.EventType
    EVENT_TYPE_DELETED: WatchSandboxesResponse.EventType
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    type: WatchSandboxesResponse.EventType
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, type: _Optional[_Union[WatchSandboxesResponse.EventType, str]] = ..., sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class SuspendSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class SuspendSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class ResumeSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace", "no_wait")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NO_WAIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    no_wait: bool
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., no_wait: _Optional[bool] = ...) -> None: ...

class ResumeSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class PauseSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class PauseSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class ExtendSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace", "ttl", "shutdown_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    ttl: _duration_pb2.Duration
    shutdown_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., shutdown_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExtendSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _sandbox_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_sandbox_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class DeleteSandboxRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class DeleteSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTemplatesRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTemplatesResponse(_message.Message):
    __slots__ = ("templates", "next_page_token")
    TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    templates: _containers.RepeatedCompositeFieldContainer[_sandbox_pb2.Template]
    next_page_token: str
    def __init__(self, templates: _Optional[_Iterable[_Union[_sandbox_pb2.Template, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListWarmPoolsRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWarmPoolsResponse(_message.Message):
    __slots__ = ("warm_pools", "next_page_token")
    WARM_POOLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    warm_pools: _containers.RepeatedCompositeFieldContainer[_sandbox_pb2.WarmPool]
    next_page_token: str
    def __init__(self, warm_pools: _Optional[_Iterable[_Union[_sandbox_pb2.WarmPool, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetWarmPoolRequest(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class GetWarmPoolResponse(_message.Message):
    __slots__ = ("warm_pool",)
    WARM_POOL_FIELD_NUMBER: _ClassVar[int]
    warm_pool: _sandbox_pb2.WarmPool
    def __init__(self, warm_pool: _Optional[_Union[_sandbox_pb2.WarmPool, _Mapping]] = ...) -> None: ...

class ScaleWarmPoolRequest(_message.Message):
    __slots__ = ("name", "namespace", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    replicas: int
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., replicas: _Optional[int] = ...) -> None: ...

class ScaleWarmPoolResponse(_message.Message):
    __slots__ = ("warm_pool",)
    WARM_POOL_FIELD_NUMBER: _ClassVar[int]
    warm_pool: _sandbox_pb2.WarmPool
    def __init__(self, warm_pool: _Optional[_Union[_sandbox_pb2.WarmPool, _Mapping]] = ...) -> None: ...
