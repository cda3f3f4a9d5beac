import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FileInfo(_message.Message):
    __slots__ = ("path", "name", "size", "mode", "is_dir", "is_symlink", "modify_time")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    IS_DIR_FIELD_NUMBER: _ClassVar[int]
    IS_SYMLINK_FIELD_NUMBER: _ClassVar[int]
    MODIFY_TIME_FIELD_NUMBER: _ClassVar[int]
    path: str
    name: str
    size: int
    mode: int
    is_dir: bool
    is_symlink: bool
    modify_time: _timestamp_pb2.Timestamp
    def __init__(self, path: _Optional[str] = ..., name: _Optional[str] = ..., size: _Optional[int] = ..., mode: _Optional[int] = ..., is_dir: _Optional[bool] = ..., is_symlink: _Optional[bool] = ..., modify_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReadFileRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "path", "offset", "length")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    offset: int
    length: int
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class ReadFileResponse(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class WriteFileHeader(_message.Message):
    __slots__ = ("sandbox", "namespace", "path", "mode", "make_parents")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MAKE_PARENTS_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    mode: int
    make_parents: bool
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ..., mode: _Optional[int] = ..., make_parents: _Optional[bool] = ...) -> None: ...

class WriteFileRequest(_message.Message):
    __slots__ = ("header", "data")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    header: WriteFileHeader
    data: bytes
    def __init__(self, header: _Optional[_Union[WriteFileHeader, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class WriteFileResponse(_message.Message):
    __slots__ = ("file",)
    FILE_FIELD_NUMBER: _ClassVar[int]
    file: FileInfo
    def __init__(self, file: _Optional[_Union[FileInfo, _Mapping]] = ...) -> None: ...

class ListFilesRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "path", "page_size", "page_token")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    page_size: int
    page_token: str
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListFilesResponse(_message.Message):
    __slots__ = ("files", "next_page_token")
    FILES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[FileInfo]
    next_page_token: str
    def __init__(self, files: _Optional[_Iterable[_Union[FileInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class StatFileRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "path")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class StatFileResponse(_message.Message):
    __slots__ = ("file",)
    FILE_FIELD_NUMBER: _ClassVar[int]
    file: FileInfo
    def __init__(self, file: _Optional[_Union[FileInfo, _Mapping]] = ...) -> None: ...

class RemoveFileRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "path", "recursive")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    recursive: bool
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ..., recursive: _Optional[bool] = ...) -> None: ...

class RemoveFileResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MakeDirRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "path", "parents", "mode")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    parents: bool
    mode: int
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ..., parents: _Optional[bool] = ..., mode: _Optional[int] = ...) -> None: ...

class MakeDirResponse(_message.Message):
    __slots__ = ("file",)
    FILE_FIELD_NUMBER: _ClassVar[int]
    file: FileInfo
    def __init__(self, file: _Optional[_Union[FileInfo, _Mapping]] = ...) -> None: ...

class WatchFilesRequest(_message.Message):
    __slots__ = ("sandbox", "namespace", "path", "recursive")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    sandbox: str
    namespace: str
    path: str
    recursive: bool
    def __init__(self, sandbox: _Optional[str] = ..., namespace: _Optional[str] = ..., path: _Optional[str] = ..., recursive: _Optional[bool] = ...) -> None: ...

class FileEvent(_message.Message):
    __slots__ = ("type", "path", "old_path", "is_dir")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TYPE_UNSPECIFIED: _ClassVar[FileEvent.Type]
        TYPE_READY: _ClassVar[FileEvent.Type]
        TYPE_CREATE: _ClassVar[FileEvent.Type]
        TYPE_WRITE: _ClassVar[FileEvent.Type]
        TYPE_REMOVE: _ClassVar[FileEvent.Type]
        TYPE_RENAME: _ClassVar[FileEvent.Type]
        TYPE_OVERFLOW: _ClassVar[FileEvent.Type]
    TYPE_UNSPECIFIED: FileEvent.Type
    TYPE_READY: FileEvent.Type
    TYPE_CREATE: FileEvent.Type
    TYPE_WRITE: FileEvent.Type
    TYPE_REMOVE: FileEvent.Type
    TYPE_RENAME: FileEvent.Type
    TYPE_OVERFLOW: FileEvent.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OLD_PATH_FIELD_NUMBER: _ClassVar[int]
    IS_DIR_FIELD_NUMBER: _ClassVar[int]
    type: FileEvent.Type
    path: str
    old_path: str
    is_dir: bool
    def __init__(self, type: _Optional[_Union[FileEvent.Type, str]] = ..., path: _Optional[str] = ..., old_path: _Optional[str] = ..., is_dir: _Optional[bool] = ...) -> None: ...

class WatchFilesResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[FileEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[FileEvent, _Mapping]]] = ...) -> None: ...
