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

class PortProtocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PORT_PROTOCOL_UNSPECIFIED: _ClassVar[PortProtocol]
    PORT_PROTOCOL_HTTP: _ClassVar[PortProtocol]
    PORT_PROTOCOL_TCP: _ClassVar[PortProtocol]
PORT_PROTOCOL_UNSPECIFIED: PortProtocol
PORT_PROTOCOL_HTTP: PortProtocol
PORT_PROTOCOL_TCP: PortProtocol

class ExposePortRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "port", "protocol", "signed_url_ttl")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    SIGNED_URL_TTL_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    port: int
    protocol: PortProtocol
    signed_url_ttl: _duration_pb2.Duration
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[_Union[PortProtocol, str]] = ..., signed_url_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ExposedPort(_message.Message):
    __slots__ = ("sandbox", "namespace", "port", "protocol", "url", "signed_url", "expire_time")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    SIGNED_URL_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    port: int
    protocol: PortProtocol
    url: str
    signed_url: str
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[_Union[PortProtocol, str]] = ..., url: _Optional[str] = ..., signed_url: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExposePortResponse(_message.Message):
    __slots__ = ("exposed",)
    EXPOSED_FIELD_NUMBER: _ClassVar[int]
    exposed: ExposedPort
    def __init__(self, exposed: _Optional[_Union[ExposedPort, _Mapping]] = ...) -> None: ...

class UnexposePortRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "port")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    port: int
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class UnexposePortResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListExposedPortsRequest(_message.Message):
    __slots__ = ("sandbox", "namespace")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class ListExposedPortsResponse(_message.Message):
    __slots__ = ("ports",)
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[ExposedPort]
    def __init__(self, ports: _Optional[_Iterable[_Union[ExposedPort, _Mapping]]] = ...) -> None: ...

class DialRequest(_message.Message):
    __slots__ = ("port", "data")
    PORT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    port: int
    data: bytes
    def __init__(self, port: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class DialResponse(_message.Message):
    __slots__ = ("connected", "data")
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    connected: bool
    data: bytes
    def __init__(self, connected: _Optional[bool] = ..., data: _Optional[bytes] = ...) -> None: ...
