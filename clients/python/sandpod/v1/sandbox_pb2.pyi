import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PHASE_UNSPECIFIED: _ClassVar[Phase]
    PHASE_PENDING: _ClassVar[Phase]
    PHASE_RUNNING: _ClassVar[Phase]
    PHASE_SUSPENDED: _ClassVar[Phase]
    PHASE_EXPIRED: _ClassVar[Phase]
    PHASE_FAILED: _ClassVar[Phase]
    PHASE_TERMINATING: _ClassVar[Phase]
    PHASE_PAUSED: _ClassVar[Phase]

class IdleAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IDLE_ACTION_UNSPECIFIED: _ClassVar[IdleAction]
    IDLE_ACTION_SUSPEND: _ClassVar[IdleAction]
    IDLE_ACTION_PAUSE: _ClassVar[IdleAction]

class ShutdownPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHUTDOWN_POLICY_UNSPECIFIED: _ClassVar[ShutdownPolicy]
    SHUTDOWN_POLICY_DELETE: _ClassVar[ShutdownPolicy]
    SHUTDOWN_POLICY_RETAIN: _ClassVar[ShutdownPolicy]
PHASE_UNSPECIFIED: Phase
PHASE_PENDING: Phase
PHASE_RUNNING: Phase
PHASE_SUSPENDED: Phase
PHASE_EXPIRED: Phase
PHASE_FAILED: Phase
PHASE_TERMINATING: Phase
PHASE_PAUSED: Phase
IDLE_ACTION_UNSPECIFIED: IdleAction
IDLE_ACTION_SUSPEND: IdleAction
IDLE_ACTION_PAUSE: IdleAction
SHUTDOWN_POLICY_UNSPECIFIED: ShutdownPolicy
SHUTDOWN_POLICY_DELETE: ShutdownPolicy
SHUTDOWN_POLICY_RETAIN: ShutdownPolicy

class Condition(_message.Message):
    __slots__ = ("type", "status", "reason", "message", "last_transition_time")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: _timestamp_pb2.Timestamp
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Sandbox(_message.Message):
    __slots__ = ("name", "namespace", "uid", "template", "pool", "labels", "phase", "message", "conditions", "create_time", "shutdown_time", "shutdown_policy", "last_activity_time", "idle_timeout", "claimed", "env_keys", "service_fqdn", "agent_restarts", "pod_restarts", "snapshot", "lease", "lease_expire_time")
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
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_TIME_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_POLICY_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_TIME_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_FIELD_NUMBER: _ClassVar[int]
    ENV_KEYS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FQDN_FIELD_NUMBER: _ClassVar[int]
    AGENT_RESTARTS_FIELD_NUMBER: _ClassVar[int]
    POD_RESTARTS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    template: str
    pool: str
    labels: _containers.ScalarMap[str, str]
    phase: Phase
    message: str
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    create_time: _timestamp_pb2.Timestamp
    shutdown_time: _timestamp_pb2.Timestamp
    shutdown_policy: ShutdownPolicy
    last_activity_time: _timestamp_pb2.Timestamp
    idle_timeout: _duration_pb2.Duration
    claimed: bool
    env_keys: _containers.RepeatedScalarFieldContainer[str]
    service_fqdn: str
    agent_restarts: int
    pod_restarts: int
    snapshot: str
    lease: _duration_pb2.Duration
    lease_expire_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., template: _Optional[str] = ..., pool: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., phase: _Optional[_Union[Phase, str]] = ..., message: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., shutdown_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., shutdown_policy: _Optional[_Union[ShutdownPolicy, str]] = ..., last_activity_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., idle_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., claimed: _Optional[bool] = ..., env_keys: _Optional[_Iterable[str]] = ..., service_fqdn: _Optional[str] = ..., agent_restarts: _Optional[int] = ..., pod_restarts: _Optional[int] = ..., snapshot: _Optional[str] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Template(_message.Message):
    __slots__ = ("name", "namespace", "image", "runtime_class_name", "idle_timeout", "default_ttl", "shutdown_policy", "auto_resume", "network_isolated", "memory_limit_bytes", "cpu_limit_millis", "pids_limit", "idle_action", "disk_limit_bytes", "inode_limit", "default_lease")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TTL_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_POLICY_FIELD_NUMBER: _ClassVar[int]
    AUTO_RESUME_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ISOLATED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    CPU_LIMIT_MILLIS_FIELD_NUMBER: _ClassVar[int]
    PIDS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    IDLE_ACTION_FIELD_NUMBER: _ClassVar[int]
    DISK_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    INODE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_LEASE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    image: str
    runtime_class_name: str
    idle_timeout: _duration_pb2.Duration
    default_ttl: _duration_pb2.Duration
    shutdown_policy: ShutdownPolicy
    auto_resume: bool
    network_isolated: bool
    memory_limit_bytes: int
    cpu_limit_millis: int
    pids_limit: int
    idle_action: IdleAction
    disk_limit_bytes: int
    inode_limit: int
    default_lease: _duration_pb2.Duration
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., image: _Optional[str] = ..., runtime_class_name: _Optional[str] = ..., idle_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., default_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., shutdown_policy: _Optional[_Union[ShutdownPolicy, str]] = ..., auto_resume: _Optional[bool] = ..., network_isolated: _Optional[bool] = ..., memory_limit_bytes: _Optional[int] = ..., cpu_limit_millis: _Optional[int] = ..., pids_limit: _Optional[int] = ..., idle_action: _Optional[_Union[IdleAction, str]] = ..., disk_limit_bytes: _Optional[int] = ..., inode_limit: _Optional[int] = ..., default_lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WarmPool(_message.Message):
    __slots__ = ("name", "namespace", "template", "replicas", "ready_replicas", "pending_replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    PENDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    template: str
    replicas: int
    ready_replicas: int
    pending_replicas: int
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., template: _Optional[str] = ..., replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., pending_replicas: _Optional[int] = ...) -> None: ...
