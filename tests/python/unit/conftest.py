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
