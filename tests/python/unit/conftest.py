"""Helpers for the unit tests (no server)."""

from __future__ import annotations

import grpc


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


def _ld(field: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (payloads under 128 bytes)."""
    return bytes([field << 3 | 2, len(payload)]) + payload


def with_reason(code: grpc.StatusCode, details: str, reason: str) -> FakeRpcError:
    """An error whose status carries a google.rpc.ErrorInfo with ``reason``, as the
    server sends it (grpc-status-details-bin)."""
    info = _ld(1, reason.encode()) + _ld(2, b"sandpod.dev")
    anything = _ld(1, b"type.googleapis.com/google.rpc.ErrorInfo") + _ld(2, info)
    status = bytes([0x08, code.value[0]]) + _ld(2, details.encode()) + _ld(3, anything)
    return FakeRpcError(code, details, [("grpc-status-details-bin", status)])


def sandbox_not_found(details: str = "sandbox not found") -> FakeRpcError:
    return with_reason(grpc.StatusCode.NOT_FOUND, details, "SANDBOX_NOT_FOUND")
