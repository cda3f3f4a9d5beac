"""The HTTP/JSON API (docs/http.md) spoken with httpx, as a web service or an
agent framework would, against the real `sandpod serve --http-listen`."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import sandpod

from .conftest import Server, free_port, make_client, python_pool

TOKEN = "http-test-token"
UPLOAD_LIMIT = 1 << 20


@pytest.fixture(scope="module")
def http_server(sandpod_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    port = free_port()
    srv = Server(
        sandpod_bin,
        tmp_path_factory.mktemp("sandpod-http"),
        token=TOKEN,
        config=python_pool(2),
        extra_args=["--http-listen", f"127.0.0.1:{port}", "--http-max-upload", str(UPLOAD_LIMIT)],
    )
    srv.http_url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    srv.start()
    yield srv
    srv.close()


@pytest.fixture
def http(http_server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=http_server.http_url,  # type: ignore[attr-defined]
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=120,
    ) as c:
        yield c


@pytest.fixture
def name(http: httpx.Client) -> Iterator[str]:
    resp = http.post("/v1/sandboxes:claim", json={"template": "python", "ttl": "600s"})
    assert resp.status_code == 200, resp.text
    sandbox = resp.json()["sandbox"]
    assert sandbox["phase"] == "PHASE_RUNNING"
    yield sandbox["name"]
    http.delete(f"/v1/sandboxes/{sandbox['name']}")


def error_of(resp: httpx.Response, http_status: int, status: str, reason: str = "") -> dict:
    assert resp.status_code == http_status, resp.text
    assert resp.headers["content-type"] == "application/json"
    err = resp.json()["error"]
    assert err["status"] == status and err["message"]
    assert err.get("reason", "") == reason
    return err


def exec_lines(resp: httpx.Response) -> tuple[str, str, int]:
    """stdout, stderr and the exit code of an exec's NDJSON answer."""
    assert resp.status_code == 200, resp.read()
    assert resp.headers["content-type"] == "application/x-ndjson"
    out, err, code = b"", b"", None
    for line in resp.iter_lines():
        msg = json.loads(line)
        assert "error" not in msg, msg
        result = msg["result"]
        out += base64.b64decode(result.get("stdout", ""))
        err += base64.b64decode(result.get("stderr", ""))
        if "exit" in result:
            code = result["exit"]["exitCode"]
    assert code is not None, "no exit status"
    return out.decode(), err.decode(), code


def test_claim_get_and_use_from_the_python_client(http, http_server, name):
    got = http.get(f"/v1/namespaces/default/sandboxes/{name}")
    assert got.status_code == 200 and got.json()["sandbox"]["name"] == name
    listed = http.get("/v1/sandboxes").json()["sandboxes"]
    assert name in [s["name"] for s in listed]
    # The same sandbox through the gRPC client: one API, two wire forms.
    with make_client(http_server) as client:
        assert client.get(name).run("echo via grpc").stdout == "via grpc\n"


def test_exec_streams_output_and_exit_code(http, name):
    with http.stream(
        "POST", f"/v1/sandboxes/{name}:exec", json={"shell": "echo out; echo err >&2; exit 4"}
    ) as resp:
        assert exec_lines(resp) == ("out\n", "err\n", 4)
    # argv in the query, standard input from the body.
    data = os.urandom(200_000)
    with http.stream(
        "POST", f"/v1/sandboxes/{name}:exec", params={"argv": ["sha256sum"]}, content=data
    ) as resp:
        out, _, code = exec_lines(resp)
    assert code == 0 and out.split()[0] == hashlib.sha256(data).hexdigest()


def test_files_as_plain_bytes(http, name):
    data = os.urandom(300_000)
    put = http.put(
        f"/v1/sandboxes/{name}/files/content",
        params={"path": "dir/blob.bin", "makeParents": "true"},
        content=data,
    )
    assert put.status_code == 200, put.text
    assert put.json()["file"]["size"] == str(len(data))
    got = http.get(f"/v1/sandboxes/{name}/files/content", params={"path": "dir/blob.bin"})
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-type"] == "application/octet-stream"
    listed = http.get(f"/v1/sandboxes/{name}/files", params={"path": "dir"}).json()["files"]
    assert [f["name"] for f in listed] == ["blob.bin"]


def test_errors(http, http_server, name):
    error_of(http.get("/v1/sandboxes/nope"), 404, "NOT_FOUND", "SANDBOX_NOT_FOUND")
    error_of(
        http.get(f"/v1/sandboxes/{name}/files/content", params={"path": "missing"}),
        404,
        "NOT_FOUND",
        "FILE_NOT_FOUND",
    )
    err = error_of(http.get("/v1/sandboxes/Not_A_Name"), 400, "INVALID_ARGUMENT", "INVALID_NAME")
    assert err["code"] == 3
    error_of(
        http.post("/v1/sandboxes:claim", json={"template": "python", "ttl": "-5s"}),
        400,
        "INVALID_ARGUMENT",
        "INVALID_LIFETIME",
    )
    error_of(
        http.put(
            f"/v1/sandboxes/{name}/files/content",
            params={"path": "big.bin"},
            content=b"x" * (UPLOAD_LIMIT + 1),
        ),
        413,
        "RESOURCE_EXHAUSTED",
        "REQUEST_TOO_LARGE",
    )
    # Auth: no token, a wrong one.
    url = http_server.http_url  # type: ignore[attr-defined]
    error_of(httpx.get(f"{url}/v1/templates"), 401, "UNAUTHENTICATED", "INVALID_TOKEN")
    bad = httpx.get(f"{url}/v1/templates", headers={"Authorization": "Bearer nope"})
    error_of(bad, 401, "UNAUTHENTICATED", "INVALID_TOKEN")


def test_openapi_lists_every_rpc(http):
    doc = http.get("/openapi.json").json()
    assert doc["swagger"] == "2.0"
    ops = {
        op["operationId"].rstrip("0123456789") for p in doc["paths"].values() for op in p.values()
    }
    service = sandpod.v1.sandbox_service_pb2.DESCRIPTOR.services_by_name["SandboxService"]
    missing = [m.name for m in service.methods if f"SandboxService_{m.name}" not in ops]
    assert not missing, f"RPCs without an HTTP route in /openapi.json: {missing}"
