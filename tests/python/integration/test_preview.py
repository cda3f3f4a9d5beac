"""Port previews from Python: expose a web server in a sandbox and fetch it."""

from __future__ import annotations

import asyncio
import http.client
import urllib.parse

import pytest

import sandpod

from .conftest import Server

SERVE = "setsid python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &"


def fetch(server: Server, url: str) -> tuple[int, bytes]:
    """GETs a preview URL at the preview listener (as a browser resolving
    *.localhost to loopback would)."""
    u = urllib.parse.urlsplit(url)
    host, port = server.preview_address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        path = u.path + ("?" + u.query if u.query else "")
        conn.request("GET", path, headers={"Host": u.netloc})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_expose_serves_a_web_server(server: Server, sandbox: sandpod.Sandbox) -> None:
    sandbox.files.write("index.html", "<h1>hello preview</h1>")
    sandbox.run(SERVE.format(port=8000))
    exposed = sandbox.expose(8000)
    assert exposed.port == 8000
    assert exposed.protocol == "http"
    assert exposed.url.startswith("http://p8000-")
    assert exposed.expires_at is not None
    status, body = fetch(server, exposed.url + "index.html")
    assert status == 200
    assert body == b"<h1>hello preview</h1>"
    status, _ = fetch(server, exposed.signed_url)
    assert status == 302  # to the page, with a cookie for this preview host

    assert [p.url for p in sandbox.exposed_ports()] == [exposed.url]
    with pytest.raises(sandpod.AlreadyExists, match="already exposed"):
        sandbox.expose(8000)
    sandbox.unexpose(8000)
    assert sandbox.exposed_ports() == []
    assert fetch(server, exposed.url)[0] == 404


def test_expose_bad_input(sandbox: sandpod.Sandbox) -> None:
    with pytest.raises(sandpod.InvalidArgument, match=r"1\.\.65535"):
        sandbox.expose(70000)
    with pytest.raises(sandpod.InvalidArgument, match="agent's own port"):
        sandbox.expose(7070)
    with pytest.raises(ValueError, match="protocol"):
        sandbox.expose(8000, protocol="udp")
    with pytest.raises(sandpod.SandpodError, match="nothing answered on port 8123"):
        sandbox.expose(8123, timeout=3)


def test_async_expose(server: Server, labels: dict[str, str]) -> None:
    async def main() -> None:
        client = sandpod.AsyncClient(server.address, token=server.token, timeout=120)
        async with client, await client.claim("python", labels=labels) as sb:
            await sb.run(SERVE.format(port=8001))
            exposed = await sb.expose(8001, signed_url_ttl=60)
            assert exposed.url.startswith("http://p8001-")
            status, _ = await asyncio.to_thread(fetch, server, exposed.url)
            assert status == 200
            assert len(await sb.exposed_ports()) == 1
            await sb.unexpose(8001)

    asyncio.run(main())
