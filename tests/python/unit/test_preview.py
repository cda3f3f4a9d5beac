"""ExposedPort from its message, and the ExposePort request the clients build."""

from __future__ import annotations

import datetime as dt

import pytest

from sandpod import ExposedPort
from sandpod._base import expose_request
from sandpod.v1 import preview_pb2


def test_exposed_port_from_pb() -> None:
    pb = preview_pb2.ExposedPort(
        sandbox="sb",
        namespace="default",
        port=8000,
        protocol=preview_pb2.PORT_PROTOCOL_TCP,
        url="http://p8000-abc.preview.localhost:50053/",
        signed_url="http://p8000-abc.preview.localhost:50053/?sandpod_preview_sig=1.x",
    )
    pb.expire_time.FromSeconds(1_800_000_000)
    ex = ExposedPort.from_pb(pb)
    assert ex.protocol == "tcp"
    assert ex.port == 8000
    assert ex.expires_at == dt.datetime.fromtimestamp(1_800_000_000, dt.timezone.utc)
    listed = ExposedPort.from_pb(preview_pb2.ExposedPort(port=80, url="u"))
    assert listed.protocol == "http"
    assert listed.expires_at is None
    assert listed.signed_url == ""


def test_expose_request() -> None:
    req = expose_request("sb", "ns", 8000, "http", None)
    assert req.protocol == preview_pb2.PORT_PROTOCOL_HTTP
    assert not req.HasField("signed_url_ttl")
    req = expose_request("sb", "ns", 8000, "tcp", 90)
    assert req.protocol == preview_pb2.PORT_PROTOCOL_TCP
    assert req.signed_url_ttl.seconds == 90
    with pytest.raises(ValueError, match="protocol"):
        expose_request("sb", "ns", 8000, "udp", None)
