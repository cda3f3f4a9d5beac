"""`sandpod mcp` driven by the official Python MCP client (`mcp` on PyPI), over stdio
and streamable HTTP, against a real `sandpod serve` with a token.

The sandboxes here come from a template without network egress (a network namespace of
their own: loopback only); previews reach them through the agent, as in production.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import io
import signal
import socket
import subprocess
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from PIL import Image

import sandpod

from .conftest import Server, free_port, make_client, python_pool

pytestmark = pytest.mark.integration

# The API's token file holds it; `sandpod mcp --token-file` reuses that file.
TOKEN = "mcp-test-token"
START_TIMEOUT = 120.0
# The lease of a session's sandboxes here: longer than any wait for a deletion below, so
# that only the end of the session can explain one (but the test of the lease itself).
LEASE = "10m"

# The shared python template with its pool of 2, without egress: sandboxes reach nothing
# but their loopback.
CONFIG = python_pool(2).replace(
    "spec:\n  podTemplate:", "spec:\n  networkPolicy:\n    egress: None\n  podTemplate:", 1
)

TOOLS = {
    "claim_sandbox",
    "list_sandboxes",
    "delete_sandbox",
    "run_command",
    "run_code",
    "read_file",
    "write_file",
    "list_files",
    "expose_port",
    "snapshot_sandbox",
    "restore_sandbox",
    "fork_sandbox",
}

PLOT = """\
import csv
import matplotlib.pyplot as plt
with open("data.csv") as f:
    rows = [(float(x), float(y)) for x, y in csv.reader(f)]
plt.plot([x for x, _ in rows], [y for _, y in rows])
plt.title("from data.csv")
plt.show()
len(rows)
"""


@pytest.fixture(scope="module")
def api(sandpod_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A `sandpod serve` with a token, previews on, and the isolated python template."""
    assert "egress: None" in CONFIG
    srv = Server(sandpod_bin, tmp_path_factory.mktemp("mcp-api"), token=TOKEN, config=CONFIG)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture
def native(api: Server) -> Iterator[sandpod.Client]:
    with make_client(api) as c:
        yield c


def stdio_params(api: Server, binary: Path, token: str = TOKEN) -> StdioServerParameters:
    # The API's address as a flag, its token from $SANDPOD_TOKEN: as the CLI takes them.
    return StdioServerParameters(
        command=str(binary),
        args=["mcp", "--address", api.address, "--lease", LEASE],
        env={"SANDPOD_TOKEN": token},
    )


class MCPHTTP:
    """One `sandpod mcp --listen` process."""

    def __init__(self, binary: Path, api: Server, workdir: Path, *extra: str) -> None:
        self.url = f"http://127.0.0.1:{free_port()}/mcp"
        host_port = urllib.parse.urlsplit(self.url).netloc
        args = [
            str(binary),
            "mcp",
            "--address",
            api.address,
            "--token",
            TOKEN,
            "--listen",
            host_port,
        ]
        self.log = workdir / f"mcp-{host_port.replace(':', '-')}.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([*args, *extra], stdout=log, stderr=subprocess.STDOUT)
        host, port = host_port.rsplit(":", 1)
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sandpod mcp exited early:\n{self.log.read_text()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection((host, int(port)), timeout=1),
            ):
                return
            time.sleep(0.1)
        raise RuntimeError(
            f"sandpod mcp did not listen within {START_TIMEOUT}s:\n{self.log.read_text()}"
        )

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(120)


@pytest.fixture
def mcp_http(sandpod_bin: Path, api: Server, tmp_path: Path) -> Iterator[object]:
    started: list[MCPHTTP] = []

    def start(*extra: str) -> MCPHTTP:
        m = MCPHTTP(sandpod_bin, api, tmp_path, *extra)
        started.append(m)
        return m

    yield start
    for m in started:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait(30)


@contextlib.asynccontextmanager
async def http_session(
    url: str, token: str | None = None, **kwargs: object
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120, read=600)) as http_client,
        Client(streamable_http_client(url, http_client=http_client, **kwargs)) as c,  # type: ignore[arg-type]
    ):
        yield c


def structured(result: object) -> dict:
    assert not result.is_error, result.content  # type: ignore[attr-defined]
    return result.structured_content  # type: ignore[attr-defined]


def gone(native: sandpod.Client, name: str, timeout: float = 60) -> bool:
    """Whether the sandbox is deleted (deleting takes a moment on a loaded machine)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            native.get(name)
        except sandpod.SandboxNotFound:
            return True
        time.sleep(0.2)
    return False


def preview_get(
    api: Server, url: str, cookie: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """GETs a preview URL at the preview listener, as a browser resolving *.localhost to
    loopback would."""
    u = urllib.parse.urlsplit(url)
    host, port = api.preview_address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        headers = {"Host": u.netloc}
        if cookie:
            headers["Cookie"] = cookie
        conn.request("GET", u.path + ("?" + u.query if u.query else ""), headers=headers)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_tools_and_their_schemas(api: Server, sandpod_bin: Path) -> None:
    async def main() -> None:
        async with Client(stdio_params(api, sandpod_bin)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            for t in tools.values():
                assert len(t.description or "") > 60, t.name
                assert t.input_schema["type"] == "object"
                assert t.input_schema.get("additionalProperties") is False, t.name
                for name, prop in t.input_schema.get("properties", {}).items():
                    assert prop.get("description"), (t.name, name)
                if t.name != "list_sandboxes":
                    assert "sandbox" in t.output_schema["properties"], t.name

            run = tools["run_command"].input_schema
            assert set(run["properties"]) == {
                "command",
                "argv",
                "cwd",
                "env",
                "timeout_seconds",
                "sandbox",
            }
            assert run["properties"]["argv"] == {
                "type": "array",
                "items": {"type": "string"},
                "description": run["properties"]["argv"]["description"],
            }
            assert run["properties"]["timeout_seconds"]["maximum"] == 3600
            assert "required" not in run  # command or argv: checked by the tool, with a reason
            assert tools["run_command"].annotations.destructive_hint is True
            assert tools["list_files"].annotations.read_only_hint is True
            for name in ("stdout", "stderr", "exit_code", "stdout_truncated"):
                assert name in tools["run_command"].output_schema["properties"]

            assert tools["run_code"].input_schema["required"] == ["code"]
            assert "error" in tools["run_code"].output_schema["properties"]
            port = tools["expose_port"].input_schema["properties"]["port"]
            assert (port["minimum"], port["maximum"]) == (1, 65535)
            assert tools["expose_port"].input_schema["properties"]["protocol"]["enum"] == [
                "http",
                "tcp",
            ]
            assert tools["write_file"].input_schema["properties"]["encoding"]["enum"] == [
                "utf-8",
                "base64",
            ]
            assert (
                tools["read_file"].input_schema["properties"]["max_bytes"]["maximum"] == 256 * 1024
            )
            assert tools["delete_sandbox"].input_schema["required"] == ["sandbox"]
            assert (
                tools["claim_sandbox"].input_schema["properties"]["template"]["default"] == "python"
            )
            for name in (
                "run_command",
                "read_file",
                "expose_port",
                "snapshot_sandbox",
                "fork_sandbox",
            ):
                assert "sandbox" not in tools[name].input_schema.get("required", []), name

    asyncio.run(main())


def test_a_session_over_stdio(api: Server, sandpod_bin: Path, native: sandpod.Client) -> None:
    """Claim, write a file, plot it with run_code, get the PNG back, serve a port and
    fetch it, end the session: the sandbox is gone."""

    async def main() -> str:
        async with Client(stdio_params(api, sandpod_bin)) as c:
            claimed = structured(await c.call_tool("claim_sandbox", {"ttl_seconds": 1800}))
            name = claimed["sandbox"]
            assert claimed["template"] == "python"
            assert native.get(name).info.phase == "Running"

            data = "".join(f"{x},{x * x}\n" for x in range(10))
            wrote = structured(
                await c.call_tool("write_file", {"path": "data.csv", "content": data})
            )
            assert wrote == {"sandbox": name, "path": "data.csv", "size": len(data)}

            ran = await c.call_tool("run_code", {"code": PLOT})
            out = structured(ran)
            assert out["sandbox"] == name
            assert out.get("error") is None, out["error"]
            assert [r["text"] for r in out["results"] if r["main"]] == ["10"]
            images = [b for b in ran.content if b.type == "image"]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            png = base64.b64decode(images[0].data)
            with Image.open(io.BytesIO(png)) as im:
                assert im.format == "PNG" and im.size[0] > 100 and im.size[1] > 100
            assert any(r.get("image") == 1 for r in out["results"])

            # An exception is a result with its traceback, not a failed call.
            failed = structured(await c.call_tool("run_code", {"code": "rows_total = 1\n1/0"}))
            assert failed["error"]["name"] == "ZeroDivisionError"
            assert "1/0" in failed["error"]["traceback"]

            listed = structured(await c.call_tool("list_files", {}))
            assert "data.csv" in [e["name"] for e in listed["entries"]]
            read = structured(await c.call_tool("read_file", {"path": "data.csv"}))
            assert (read["content"], read["encoding"], read["truncated"]) == (data, "utf-8", False)

            serve = (
                "echo '<h1>from the sandbox</h1>' > index.html && setsid python3 -m http.server"
                " 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &"
            )
            served = structured(await c.call_tool("run_command", {"command": serve}))
            assert (served["sandbox"], served["exit_code"]) == (name, 0)
            exposed = structured(await c.call_tool("expose_port", {"port": 8000}))
            assert exposed["sandbox"] == name
            # The signed URL lets a browser in without a token: a redirect with a cookie.
            status, headers, _ = await asyncio.to_thread(preview_get, api, exposed["signed_url"])
            assert status == 302
            cookie = headers["Set-Cookie"].split(";", 1)[0]
            status, _, body = await asyncio.to_thread(
                preview_get, api, exposed["url"] + "index.html", cookie
            )
            assert (status, body) == (200, b"<h1>from the sandbox</h1>\n")

            mine = structured(await c.call_tool("list_sandboxes", {}))
            entry = next(s for s in mine["sandboxes"] if s["name"] == name)
            assert entry["this_session"] and entry["current"]
            return name

    name = asyncio.run(main())
    assert gone(native, name), f"the session's sandbox {name} outlived the session (stdio EOF)"


def test_the_first_call_claims_and_long_output_is_cut(
    api: Server, sandpod_bin: Path, native: sandpod.Client
) -> None:
    async def main() -> str:
        async with Client(stdio_params(api, sandpod_bin)) as c:
            first = structured(
                await c.call_tool(
                    "run_command",
                    {"argv": ["sh", "-c", "echo $GREETING; pwd"], "env": {"GREETING": "hi"}},
                )
            )
            name = first["sandbox"]
            assert first["stdout"].startswith("hi\n")
            assert native.get(name).labels.get("sandpod-mcp-session")
            again = structured(
                await c.call_tool(
                    "run_command",
                    {"command": "head -c 100000 /dev/zero | tr '\\0' x; echo END >&2; exit 3"},
                )
            )
            assert again["sandbox"] == name  # the same sandbox for the whole session
            assert again["exit_code"] == 3
            assert again["stdout_truncated"] and len(again["stdout"]) < 33 * 1024
            assert "bytes left out" in again["stdout"]
            assert again["stderr"] == "END\n" and not again["stderr_truncated"]
            await c.call_tool("write_file", {"path": "digits.txt", "content": "0123456789"})
            head = structured(
                await c.call_tool("read_file", {"path": "digits.txt", "max_bytes": 4})
            )
            assert (head["content"], head["length"], head["size"], head["truncated"]) == (
                "0123",
                4,
                10,
                True,
            )
            rest = structured(await c.call_tool("read_file", {"path": "digits.txt", "offset": 8}))
            assert (rest["content"], rest["offset"], rest["truncated"]) == ("89", 8, False)
            bad = await c.call_tool("run_command", {"command": "true", "argv": ["true"]})
            assert bad.is_error and "not both" in bad.content[0].text
            missing = await c.call_tool("read_file", {"path": "no/such/file"})
            assert missing.is_error and name in missing.content[0].text
            return name

    name = asyncio.run(main())
    assert gone(native, name)


def test_a_wrong_api_token_is_a_tool_error(api: Server, sandpod_bin: Path) -> None:
    async def main() -> None:
        async with Client(stdio_params(api, sandpod_bin, token="wrong")) as c:
            res = await c.call_tool("run_command", {"command": "true"})
            assert res.is_error
            assert "bearer token" in res.content[0].text
            assert len((await c.list_tools()).tools) == len(TOOLS)  # still serving

    asyncio.run(main())


def test_http_with_the_api_tokens(api: Server, mcp_http: object, native: sandpod.Client) -> None:
    m = mcp_http("--token-file", str(api.token_file))  # type: ignore[operator]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        r = httpx.post(
            m.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", **headers},
            timeout=60,
        )
        assert r.status_code == 401, (headers, r.status_code, r.text)

    async def refused() -> None:
        async with http_session(m.url, token="wrong") as c:
            await c.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 - the client's error type varies by layer
        asyncio.run(refused())

    async def main() -> str:
        async with http_session(m.url, token=TOKEN) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            ran = structured(await c.call_tool("run_command", {"command": "echo over http"}))
            assert ran["stdout"] == "over http\n"
            assert native.get(ran["sandbox"]).info.phase == "Running"
            return ran["sandbox"]

    name = asyncio.run(main())
    assert gone(native, name), "the HTTP session's sandbox outlived the session (DELETE)"
    assert m.stop() == 0


def test_http_without_tokens_on_loopback(
    api: Server, mcp_http: object, native: sandpod.Client
) -> None:
    m = mcp_http()  # type: ignore[operator]

    async def main() -> str:
        async with http_session(m.url) as c:
            ran = structured(await c.call_tool("run_code", {"code": "6 * 7"}))
            assert ran["results"][0]["text"] == "42"
            return ran["sandbox"]

    assert gone(native, asyncio.run(main()))
    assert m.stop() == 0


def test_http_session_expiry_and_shutdown_delete_sandboxes(
    api: Server, mcp_http: object, native: sandpod.Client
) -> None:
    """A client that goes away without ending its session: the idle session expires;
    a session still open when the server stops ends with it."""
    m = mcp_http("--session-timeout", "3s")  # type: ignore[operator]

    async def open_session(names: list[str], keep_open: asyncio.Event | None = None) -> None:
        async with http_session(m.url, terminate_on_close=False) as c:
            names.append(
                structured(await c.call_tool("run_command", {"command": "true"}))["sandbox"]
            )
            if keep_open is not None:
                keep_open.set()
                await asyncio.sleep(3600)

    abandoned: list[str] = []
    asyncio.run(open_session(abandoned))
    assert gone(native, abandoned[0]), "the expired session's sandbox was not deleted"

    async def open_until_shutdown() -> str:
        opened, names = asyncio.Event(), []
        task = asyncio.create_task(open_session(names, opened))
        await opened.wait()
        assert (await asyncio.to_thread(native.get, names[0])).info.phase == "Running"
        assert await asyncio.to_thread(m.stop) == 0
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        return names[0]

    # Deleted before the server exits (the lease is longer than the wait).
    assert gone(native, asyncio.run(open_until_shutdown())), "shutdown left the sandbox"


def test_the_lease_outlives_a_killed_server(
    api: Server, mcp_http: object, native: sandpod.Client
) -> None:
    """A server killed before it could delete its sessions' sandboxes leaves them only
    until their lease, which it no longer renews, runs out."""
    m = mcp_http("--lease", "10s")  # type: ignore[operator]
    names: list[str] = []

    async def open_until_killed() -> None:
        async with http_session(m.url, terminate_on_close=False) as c:
            names.append(
                structured(await c.call_tool("run_command", {"command": "true"}))["sandbox"]
            )
            # Renewed while the session lasts.
            await asyncio.sleep(8)
            assert (await asyncio.to_thread(native.get, names[0])).info.phase == "Running"
            await asyncio.to_thread(m.stop, signal.SIGKILL)

    with contextlib.suppress(BaseException):
        asyncio.run(open_until_killed())
    assert names
    assert gone(native, names[0]), "the lease did not reclaim the sandbox of a killed server"


def test_snapshot_restore_fork_delete_and_keep(
    api: Server, sandpod_bin: Path, native: sandpod.Client
) -> None:
    async def main() -> tuple[str, list[str], str]:
        async with Client(stdio_params(api, sandpod_bin)) as c:
            wrote = structured(
                await c.call_tool("write_file", {"path": "state.txt", "content": "v1"})
            )
            name = wrote["sandbox"]
            snap = structured(await c.call_tool("snapshot_sandbox", {}))
            assert snap["sandbox"] == name and snap["snapshot"]
            await c.call_tool("write_file", {"path": "state.txt", "content": "v2"})
            restored = structured(
                await c.call_tool("restore_sandbox", {"snapshot": snap["snapshot"]})
            )
            assert (restored["sandbox"], restored["phase"]) == (name, "Running")
            read = structured(await c.call_tool("read_file", {"path": "state.txt"}))
            assert (read["sandbox"], read["content"]) == (name, "v1")

            forked = structured(await c.call_tool("fork_sandbox", {"count": 2}))
            assert forked["sandbox"] == name and len(forked["forks"]) == 2
            for f in forked["forks"]:
                got = structured(
                    await c.call_tool("read_file", {"path": "state.txt", "sandbox": f})
                )
                assert (got["sandbox"], got["content"]) == (f, "v1")
            deleted = structured(
                await c.call_tool("delete_sandbox", {"sandbox": forked["forks"][0]})
            )
            assert deleted == {"sandbox": forked["forks"][0], "deleted": True}
            assert gone(native, forked["forks"][0])

            # A PNG file comes back as an image too.
            plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('p.png')"
            assert "error" not in structured(await c.call_tool("run_code", {"code": plot}))
            png = await c.call_tool("read_file", {"path": "p.png"})
            assert structured(png)["encoding"] == "base64" and structured(png)["image"]
            assert [b.mime_type for b in png.content if b.type == "image"] == ["image/png"]

            kept = structured(
                await c.call_tool("claim_sandbox", {"keep": True, "ttl_seconds": 600})
            )
            assert "outlives" in kept["ends_with"]
            # The kept sandbox is the session's default from now on.
            now = structured(await c.call_tool("run_command", {"command": "true"}))
            assert now["sandbox"] == kept["sandbox"]
            return name, forked["forks"], kept["sandbox"]

    name, forks, kept = asyncio.run(main())
    assert gone(native, name) and gone(native, forks[1])
    try:
        assert native.get(kept).info.phase == "Running", "a kept sandbox went with the session"
    finally:
        native.get(kept).delete()
