"""Helpers for the unit tests (no server)."""

from __future__ import annotations

import grpc
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2


class FakeRpcError(grpc.RpcError):
    """A grpc.RpcError with a code, a message and optional trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str = "", trailing=()) -> None:
        super().__init__(details)
        self._code = code
        self._details = details
        self._trailing = tuple(trailing)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self):
        return self._trailing


def status_bytes(code: grpc.StatusCode, details: str, *infos: Message) -> bytes:
    """A serialized google.rpc.Status with ``infos`` as its details."""
    status = status_pb2.Status(code=code.value[0], message=details)
    for info in infos:
        status.details.add().Pack(info)
    return status.SerializeToString()


def with_reason(code: grpc.StatusCode, details: str, reason: str) -> FakeRpcError:
    """An error whose status carries a google.rpc.ErrorInfo with ``reason``, as the
    server sends it (grpc-status-details-bin)."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain="sandpod.dev")
    return FakeRpcError(
        code, details, [("grpc-status-details-bin", status_bytes(code, details, info))]
    )


def sandbox_not_found(details: str = "sandbox not found") -> FakeRpcError:
    return with_reason(grpc.StatusCode.NOT_FOUND, details, "SANDBOX_NOT_FOUND")
