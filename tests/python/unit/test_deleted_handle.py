"""A handle whose sandbox is gone says so, in its repr and in Jupyter (sync and asyncio):
once deleted through it, or once a call through it got SandboxNotFound."""

import asyncio

import grpc
import pytest

import sandpod
from sandpod.v1 import sandbox_service_pb2

from .conftest import FakeRpcError, sandbox_not_found, with_reason
from .test_client_logic import FakeStub, make_client, sandbox_pb


def handle(stub) -> sandpod.Sandbox:
    return sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))


def assert_shows_deleted(sb) -> None:
    assert sb.deleted
    assert sb.status is sandpod.Phase.DELETED
    assert "status=Deleted" in repr(sb)
    page = sb._repr_html_()
    assert "Deleted" in page and "Running" not in page


def test_delete_shows_in_repr_and_html():
    sb = handle(FakeStub(DeleteSandbox=[sandbox_service_pb2.DeleteSandboxResponse()]))
    assert "status=Running" in repr(sb) and "Running" in sb._repr_html_()
    assert not sb.deleted
    sb.delete()
    assert_shows_deleted(sb)
    assert "deleted through this handle" in sb._repr_html_()


def test_leaving_the_block_shows_deleted():
    sb = handle(FakeStub(DeleteSandbox=[sandbox_service_pb2.DeleteSandboxResponse()]))
    with sb:
        pass
    assert_shows_deleted(sb)


@pytest.mark.parametrize(
    "call",
    [
        lambda sb: sb.refresh(),
        lambda sb: sb.files.stat("a.txt"),
        lambda sb: sb.files.read("a.txt"),
    ],
    ids=["refresh", "files.stat", "files.read"],
)
def test_a_call_that_finds_the_sandbox_gone_shows_deleted(call):
    gone = sandbox_not_found('sandbox "python-abc" not found in namespace "default"')
    stub = FakeStub(GetSandbox=[gone], StatFile=[gone], ReadFile=[gone])
    sb = handle(stub)
    with pytest.raises(sandpod.SandboxNotFound):
        call(sb)
    assert_shows_deleted(sb)
    assert "not found" in sb._repr_html_()


def test_a_missing_file_leaves_the_handle_alone():
    missing = with_reason(
        grpc.StatusCode.NOT_FOUND, 'stat_file: "a" does not exist', "FILE_NOT_FOUND"
    )
    sb = handle(FakeStub(StatFile=[missing, missing]))
    with pytest.raises(sandpod.FileNotFound):
        sb.files.stat("a")
    assert sb.files.exists("a") is False
    assert not sb.deleted and sb.status is sandpod.Phase.RUNNING


def test_an_exec_that_finds_the_sandbox_gone_shows_deleted():
    class GoneExec:
        def __init__(self, requests):
            self.requests = requests

        def __iter__(self):
            return self

        def __next__(self):
            raise sandbox_not_found()

        def cancel(self):
            return True

    stub = FakeStub()
    stub.Exec = lambda requests, **kw: GoneExec(requests)
    sb = handle(stub)
    with pytest.raises(sandpod.SandboxNotFound):
        sb.run("true")
    assert_shows_deleted(sb)


def test_a_later_answer_from_the_server_wins():
    stub = FakeStub(
        GetSandbox=[
            sandbox_not_found(),
            sandbox_service_pb2.GetSandboxResponse(sandbox=sandbox_pb()),
        ]
    )
    sb = handle(stub)
    with pytest.raises(sandpod.SandboxNotFound):
        sb.refresh()
    assert sb.deleted
    sb.refresh()  # made again under the same name: the handle shows what the server says
    assert not sb.deleted and sb.status is sandpod.Phase.RUNNING


class AsyncStub:
    """An asyncio stub whose unary methods answer from a script."""

    def __init__(self, **scripts):
        self.scripts = {k: list(v) for k, v in scripts.items()}

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)

        def call(request=None, **kwargs):
            outcome = self.scripts[method].pop(0)

            async def answer():
                if isinstance(outcome, BaseException):
                    raise outcome
                return outcome

            return answer()

        return call


def async_handle(stub) -> sandpod.AsyncSandbox:
    client = sandpod.AsyncClient("127.0.0.1:1", progress=False, timeout=5)
    client._stub_ = stub
    return sandpod.AsyncSandbox(client, sandpod.SandboxInfo.from_pb(sandbox_pb()))


def test_async_delete_and_leaving_the_block_show_deleted():
    async def main():
        sb = async_handle(AsyncStub(DeleteSandbox=[sandbox_service_pb2.DeleteSandboxResponse()]))
        assert "status=Running" in repr(sb)
        await sb.delete()
        assert_shows_deleted(sb)

        sb = async_handle(AsyncStub(DeleteSandbox=[sandbox_service_pb2.DeleteSandboxResponse()]))
        async with sb:
            pass
        assert_shows_deleted(sb)

    asyncio.run(main())


def test_async_calls_that_find_the_sandbox_gone_show_deleted():
    async def main():
        sb = async_handle(AsyncStub(GetSandbox=[sandbox_not_found()]))
        with pytest.raises(sandpod.SandboxNotFound):
            await sb.refresh()
        assert_shows_deleted(sb)

        sb = async_handle(AsyncStub(StatFile=[sandbox_not_found()]))
        with pytest.raises(sandpod.SandboxNotFound):
            await sb.files.stat("a.txt")
        assert_shows_deleted(sb)

        missing = FakeRpcError(grpc.StatusCode.NOT_FOUND, "no reason: an older server")
        sb = async_handle(AsyncStub(StatFile=[missing]))
        with pytest.raises(sandpod.NotFound):
            await sb.files.stat("a.txt")
        assert not sb.deleted

    asyncio.run(main())


def test_a_write_that_finds_the_sandbox_gone_shows_deleted():
    stub = FakeStub(WriteFile=[sandbox_not_found()])
    sb = handle(stub)
    with pytest.raises(sandpod.SandboxNotFound):
        sb.files.write("a.txt", b"x")
    assert_shows_deleted(sb)
