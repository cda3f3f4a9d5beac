"""Client behaviour over a fake stub: request ids, retries, what is never replayed.

Only for logic a real server cannot provoke on demand; everything else is tested
against the real server in tests/python/integration.
"""

import asyncio

import grpc
import pytest

import sandpod
from sandpod.v1 import exec_pb2, files_pb2, sandbox_pb2, sandbox_service_pb2

from .conftest import FakeRpcError, sandbox_not_found

FAST = sandpod.RetryPolicy(initial_backoff=0.001, max_backoff=0.002)


def sandbox_pb(name="python-abc"):
    return sandbox_pb2.Sandbox(
        name=name, namespace="default", template="python", phase=sandbox_pb2.PHASE_RUNNING
    )


class FakeStub:
    """Records calls; each method answers from a script of results or errors."""

    def __init__(self, **scripts):
        self.calls: dict[str, list] = {}
        self.scripts = {k: list(v) for k, v in scripts.items()}

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)

        def call(request=None, **kwargs):
            if request is not None and hasattr(request, "__next__"):
                request = list(request)  # a client stream: consume it like grpc does
            self.calls.setdefault(method, []).append((request, kwargs))
            outcome = self.scripts[method].pop(0)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        return call


def unavailable():
    return FakeRpcError(grpc.StatusCode.UNAVAILABLE, "server restarting")


def make_client(stub):
    """A client whose calls go to ``stub``; there is no server to wait for."""
    client = sandpod.Client(
        "127.0.0.1:1", retry=FAST, progress=False, timeout=5, connect_timeout=None
    )
    client._stub = stub
    return client


def test_claim_reuses_one_request_id_across_retries():
    resp = sandbox_service_pb2.ClaimSandboxResponse(sandbox=sandbox_pb(), warm=True)
    stub = FakeStub(ClaimSandbox=[unavailable(), unavailable(), resp])
    with make_client(stub) as client:
        sb = client.claim("python", ttl=60, labels={"a": "b"})
    ids = [req.request_id for req, _ in stub.calls["ClaimSandbox"]]
    assert len(ids) == 3
    assert len(set(ids)) == 1 and ids[0]
    assert sb.name == "python-abc" and sb.warm is True
    assert stub.calls["ClaimSandbox"][0][0].ttl.seconds == 60


def test_each_claim_gets_its_own_request_id():
    resp = sandbox_service_pb2.ClaimSandboxResponse(sandbox=sandbox_pb())
    stub = FakeStub(ClaimSandbox=[resp, resp])
    with make_client(stub) as client:
        client.claim("python")
        client.claim("python")
    ids = {req.request_id for req, _ in stub.calls["ClaimSandbox"]}
    assert len(ids) == 2


def test_create_reuses_given_request_id_and_reports_it_on_failure():
    stub = FakeStub(CreateSandbox=[unavailable()] * 1000)
    client = sandpod.Client(
        "127.0.0.1:1",
        retry=sandpod.RetryPolicy(initial_backoff=0.001, max_backoff=0.002, max_attempts=4),
        progress=False,
        connect_timeout=None,
    )
    client._stub = stub
    with pytest.raises(sandpod.Unavailable) as info:
        client.create("python", request_id="my-key")
    assert info.value.request_id == "my-key"
    assert [r.request_id for r, _ in stub.calls["CreateSandbox"]] == ["my-key"] * 4


def test_no_retry_on_a_permanent_error():
    stub = FakeStub(GetSandbox=[sandbox_not_found("no sandbox x")])
    with make_client(stub) as client, pytest.raises(sandpod.SandboxNotFound, match="no sandbox x"):
        client.get("x")
    assert len(stub.calls["GetSandbox"]) == 1


def test_every_attempt_has_a_deadline_within_the_budget():
    resp = sandbox_service_pb2.GetSandboxResponse(sandbox=sandbox_pb())
    stub = FakeStub(GetSandbox=[unavailable(), resp])
    with make_client(stub) as client:
        client.get("x", timeout=3)
    timeouts = [kw["timeout"] for _, kw in stub.calls["GetSandbox"]]
    assert all(t is not None and 0 < t <= 3 for t in timeouts)


def test_delete_that_finds_nothing_on_a_retry_succeeded():
    stub = FakeStub(DeleteSandbox=[unavailable(), FakeRpcError(grpc.StatusCode.NOT_FOUND, "gone")])
    client = make_client(stub)
    sb = sandpod.Sandbox(client, sandpod.SandboxInfo.from_pb(sandbox_pb()))
    sb.delete()
    assert len(stub.calls["DeleteSandbox"]) == 2


def test_delete_of_a_missing_sandbox_raises():
    stub = FakeStub(DeleteSandbox=[sandbox_not_found("gone")])
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    with pytest.raises(sandpod.SandboxNotFound):
        sb.delete()
    assert sb.deleted and sb.status == sandpod.Phase.DELETED


class FailingExec:
    """An Exec call that fails with UNAVAILABLE on the first read."""

    def __init__(self, requests):
        self.requests = requests

    def __iter__(self):
        return self

    def __next__(self):
        raise unavailable()

    def cancel(self):
        return True


def test_exec_is_never_replayed():
    stub = FakeStub(Exec=[])
    calls = []

    def exec_(requests, **kwargs):
        calls.append(kwargs)
        return FailingExec(requests)

    stub.Exec = exec_
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    with pytest.raises(sandpod.Unavailable):
        sb.run("echo hi")
    assert len(calls) == 1
    assert calls[0]["wait_for_ready"] is True
    assert calls[0]["timeout"] > 5  # the command's timeout plus a grace period


def test_write_file_is_never_replayed():
    stub = FakeStub(WriteFile=[unavailable(), files_pb2.WriteFileResponse()])
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    with pytest.raises(sandpod.Unavailable):
        sb.files.write("a.txt", b"x" * (3 << 20))
    assert len(stub.calls["WriteFile"]) == 1
    reqs = stub.calls["WriteFile"][0][0]
    assert reqs[0].WhichOneof("msg") == "header"
    assert [len(r.data) for r in reqs[1:]] == [1 << 20] * 3


class FakeReadStream:
    def __init__(self, chunks, error=None):
        self.chunks, self.error = chunks, error

    def __iter__(self):
        yield from self.chunks
        if self.error:
            raise self.error


def test_read_resumes_at_the_offset_after_a_broken_stream():
    stub = FakeStub(
        ReadFile=[
            FakeReadStream([files_pb2.ReadFileResponse(data=b"abc")], unavailable()),
            FakeReadStream([files_pb2.ReadFileResponse(data=b"def")]),
        ]
    )
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    assert sb.files.read("f") == b"abcdef"
    assert [r.offset for r, _ in stub.calls["ReadFile"]] == [0, 3]


def test_run_sends_start_stdin_and_close():
    sent = []

    class OkExec:
        def __init__(self, requests):
            self.requests = requests

        def __iter__(self):
            sent.append(next(self.requests))  # start
            while True:
                msg = next(self.requests)
                sent.append(msg)
                if msg.WhichOneof("msg") == "close_stdin":
                    break
            yield exec_pb2.ExecResponse(started=exec_pb2.ExecStarted(pid=7))
            yield exec_pb2.ExecResponse(stdout="héllo".encode()[:2])
            yield exec_pb2.ExecResponse(stdout="héllo".encode()[2:])
            yield exec_pb2.ExecResponse(exit=exec_pb2.ExitStatus(exit_code=0))

        def cancel(self):
            return True

    stub = FakeStub()
    stub.Exec = lambda requests, **kw: OkExec(requests)
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    chunks = []
    result = sb.run(["cat", "-"], stdin="in", on_output=chunks.append, env={"A": "1"})
    assert result.stdout == "héllo" and result.exit_code == 0 and result.ok
    assert "".join(c.text for c in chunks) == "héllo"
    start = sent[0].start
    assert list(start.argv) == ["cat", "-"] and start.env["A"] == "1"
    assert start.timeout.seconds == 5
    assert [m.WhichOneof("msg") for m in sent[1:]] == ["stdin", "close_stdin"]


def test_async_claim_reuses_one_request_id_across_retries():
    resp = sandbox_service_pb2.ClaimSandboxResponse(sandbox=sandbox_pb())
    seen = []
    outcomes = [unavailable(), unavailable(), resp]

    class Stub:
        def ClaimSandbox(self, request, **kwargs):  # noqa: N802 - gRPC method name
            seen.append(request.request_id)
            outcome = outcomes.pop(0)

            async def answer():
                if isinstance(outcome, BaseException):
                    raise outcome
                return outcome

            return answer()

    async def main():
        client = sandpod.AsyncClient("127.0.0.1:1", retry=FAST, progress=False)
        client._stub_ = Stub()
        sb = await client.claim("python")
        assert sb.name == "python-abc"

    asyncio.run(main())
    assert len(seen) == 3 and len(set(seen)) == 1


def test_bad_arguments_fail_before_any_call():
    client = make_client(FakeStub())
    with pytest.raises(ValueError):
        client.claim("")
    with pytest.raises(ValueError):
        client.claim("python", ttl=10, shutdown_time=__import__("datetime").datetime.now())
    with pytest.raises(ValueError):
        client.claim("python", on_exit="explode")
    with pytest.raises(ValueError):
        client.claim("python", shutdown_policy="Sometimes")
    with pytest.raises(ValueError):
        client.claim_many("python", 2, concurrency=0)


def test_restart_on_failure_is_sent_only_when_given():
    from sandpod import _base

    common = dict(
        ttl=None, shutdown_time=None, shutdown_policy=None, labels=None, env=None, request_id="r"
    )
    unset = _base.claim_request("python", "default", **common)
    assert not unset.HasField("restart_on_failure")
    off = _base.claim_request("python", "default", restart_on_failure=False, **common)
    assert off.HasField("restart_on_failure") and off.restart_on_failure is False
    on = _base.create_request(
        "python", "default", name=None, wait=True, restart_on_failure=True, **common
    )
    assert on.HasField("restart_on_failure") and on.restart_on_failure is True
    with pytest.raises(TypeError):
        _base.claim_request("python", "default", restart_on_failure="yes", **common)  # type: ignore[arg-type]
