"""Stdin flow control, ListFiles pages and which RESOURCE_EXHAUSTED is retried, over
fake stubs (the real server is in tests/python/integration)."""

import asyncio
import threading

import grpc
import pytest

import sandpod
from sandpod import _base
from sandpod.v1 import exec_pb2, files_pb2, sandbox_pb2, sandbox_service_pb2

from .conftest import FakeRpcError
from .test_client_logic import FAST, FakeStub, make_client, sandbox_pb

WINDOW = 1 << 20


def exhausted(msg="write_file: no space left in the sandbox"):
    return FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, msg)


def started(window=WINDOW):
    return exec_pb2.ExecResponse(started=exec_pb2.ExecStarted(pid=7, stdin_window=window))


def kinds(msgs):
    return [m.WhichOneof("msg") for m in msgs]


# --- ExecInput: the pure logic both clients share ---------------------------------------


def test_exec_input_keeps_stdin_within_the_window_and_lets_signals_pass():
    inp = _base.ExecInput(exec_pb2.ExecRequest(start=exec_pb2.ExecStart(shell="x")))
    inp.put_stdin(b"a" * (3 * WINDOW))
    inp.close_stdin()
    assert inp.pop().WhichOneof("msg") == "start"
    # Before the server says its window, only the initial window goes.
    first = inp.pop()
    assert len(first.stdin) == _base.INITIAL_STDIN_WINDOW
    assert inp.pop() is None
    inp.on_response(started())
    sent = [first]
    while (m := inp.pop()) is not None:
        sent.append(m)
    assert sum(len(m.stdin) for m in sent) == inp.sent == WINDOW
    # A signal goes at once, ahead of the stdin that waits.
    inp.signal(9)
    assert inp.pop().signal == 9
    assert inp.pop() is None
    # Acknowledgements make room; close_stdin follows the last byte.
    total = inp.sent
    out = []
    while True:
        inp.on_response(exec_pb2.ExecResponse(stdin_acked=inp.sent))
        m = inp.pop()
        if m is None:
            break
        out.append(m)
        while (m := inp.pop()) is not None:
            out.append(m)
    assert kinds(out)[-1] == "close_stdin"
    assert total + sum(len(m.stdin) for m in out) == 3 * WINDOW


def test_exec_input_without_a_window_sends_everything():
    inp = _base.ExecInput(exec_pb2.ExecRequest(start=exec_pb2.ExecStart(shell="x")))
    inp.on_response(started(window=0))  # an older server
    inp.put_stdin(b"b" * (3 << 20))
    msgs = []
    while (m := inp.pop()) is not None:
        msgs.append(m)
    assert kinds(msgs) == ["start", "stdin", "stdin", "stdin"]
    inp.end()
    inp.signal(9)
    assert inp.pop() is None


# --- exec: a kill behind stdin nobody reads -------------------------------------------


class SleepExec:
    """A sync Exec call whose command reads no stdin: it acknowledges none, records the
    most stdin it had unacknowledged, and ends at a signal."""

    def __init__(self, requests):
        self.requests = requests
        self.received = 0
        self.full = threading.Event()

    def __iter__(self):
        assert next(self.requests).WhichOneof("msg") == "start"
        yield started()
        for msg in self.requests:
            kind = msg.WhichOneof("msg")
            if kind == "stdin":
                self.received += len(msg.stdin)
                if self.received >= WINDOW:
                    self.full.set()
            elif kind == "signal":
                yield exec_pb2.ExecResponse(
                    exit=exec_pb2.ExitStatus(exit_code=-1, signal=msg.signal)
                )
                return

    def cancel(self):
        return True


def test_kill_goes_out_while_stdin_waits_for_the_window():
    calls = []

    def exec_(requests, **kwargs):
        calls.append(SleepExec(requests))
        return iter(calls[-1])

    stub = FakeStub()
    stub.Exec = exec_
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    proc = sb.start("sleep 1000")
    proc.write_stdin(b"y" * (64 << 20))  # never blocks
    assert calls[0].full.wait(30)
    proc.kill()
    result = proc.wait(30)
    assert result.signal == 9 and result.exit_code == -1
    assert calls[0].received <= WINDOW


class FakeAsyncExec:
    """The asyncio twin of SleepExec, as a grpc.aio stream-stream call."""

    def __init__(self):
        self.responses: asyncio.Queue = asyncio.Queue()
        self.received = 0
        self.full = asyncio.Event()
        self._done = False

    async def write(self, msg):
        kind = msg.WhichOneof("msg")
        if kind == "start":
            self.responses.put_nowait(started())
        elif kind == "stdin":
            self.received += len(msg.stdin)
            if self.received >= WINDOW:
                self.full.set()
        elif kind == "signal":
            self.responses.put_nowait(
                exec_pb2.ExecResponse(exit=exec_pb2.ExitStatus(exit_code=-1, signal=msg.signal))
            )

    async def read(self):
        return await self.responses.get()

    def cancel(self):
        self._done = True

    def done(self):
        return self._done


def test_async_kill_goes_out_while_stdin_waits_for_the_window():
    call = None

    class Stub:
        def Exec(self, **kwargs):  # noqa: N802 - gRPC method name
            nonlocal call
            call = FakeAsyncExec()
            return call

    async def main():
        client = sandpod.AsyncClient("127.0.0.1:1", retry=FAST, progress=False)
        client._stub_ = Stub()
        sb = sandpod.AsyncSandbox(client, sandpod.SandboxInfo.from_pb(sandbox_pb()))
        proc = await sb.start("sleep 1000")
        await proc.write_stdin(b"y" * (64 << 20))  # returns at once
        await asyncio.wait_for(call.full.wait(), 30)
        await proc.kill()
        result = await proc.wait(30)
        assert result.signal == 9
        assert call.received <= WINDOW

    asyncio.run(main())


# --- ListFiles pages --------------------------------------------------------------------


def pages():
    def info(name):
        return files_pb2.FileInfo(path=f"d/{name}", name=name)

    return [
        files_pb2.ListFilesResponse(files=[info("a"), info("b")], next_page_token="t1"),
        files_pb2.ListFilesResponse(files=[info("c")], next_page_token="t2"),
        files_pb2.ListFilesResponse(files=[info("d")]),
    ]


def test_list_follows_every_page():
    stub = FakeStub(ListFiles=pages())
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    assert [f.name for f in sb.files.list("d")] == ["a", "b", "c", "d"]
    assert [r.page_token for r, _ in stub.calls["ListFiles"]] == ["", "t1", "t2"]


def test_async_list_follows_every_page():
    script = pages()
    tokens = []

    class Stub:
        def ListFiles(self, request, **kwargs):  # noqa: N802 - gRPC method name
            tokens.append(request.page_token)

            async def answer():
                return script.pop(0)

            return answer()

    async def main():
        client = sandpod.AsyncClient("127.0.0.1:1", retry=FAST, progress=False)
        client._stub_ = Stub()
        sb = sandpod.AsyncSandbox(client, sandpod.SandboxInfo.from_pb(sandbox_pb()))
        return [f.name for f in await sb.files.list("d")]

    assert asyncio.run(main()) == ["a", "b", "c", "d"]
    assert tokens == ["", "t1", "t2"]


# --- RESOURCE_EXHAUSTED ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("ListFiles", lambda sb: sb.files.list("d")),
        ("StatFile", lambda sb: sb.files.stat("f")),
        ("MakeDir", lambda sb: sb.files.mkdir("d")),
        ("RemoveFile", lambda sb: sb.files.remove("f")),
        ("ReadFile", lambda sb: sb.files.read("f")),
    ],
)
def test_file_calls_raise_resource_exhausted_at_once(method, call):
    stub = FakeStub(**{method: [exhausted(), exhausted()]})
    sb = sandpod.Sandbox(make_client(stub), sandpod.SandboxInfo.from_pb(sandbox_pb()))
    with pytest.raises(sandpod.ResourceExhausted, match="no space left"):
        call(sb)
    assert len(stub.calls[method]) == 1


def test_async_file_call_raises_resource_exhausted_at_once():
    attempts = []

    class Stub:
        def StatFile(self, request, **kwargs):  # noqa: N802 - gRPC method name
            attempts.append(request)

            async def answer():
                raise exhausted()

            return answer()

    async def main():
        client = sandpod.AsyncClient("127.0.0.1:1", retry=FAST, progress=False)
        client._stub_ = Stub()
        sb = sandpod.AsyncSandbox(client, sandpod.SandboxInfo.from_pb(sandbox_pb()))
        with pytest.raises(sandpod.ResourceExhausted):
            await sb.files.stat("f")

    asyncio.run(main())
    assert len(attempts) == 1


def test_claim_and_create_wait_out_resource_exhausted():
    claim = sandbox_service_pb2.ClaimSandboxResponse(sandbox=sandbox_pb(), warm=True)
    create = sandbox_service_pb2.CreateSandboxResponse(sandbox=sandbox_pb())
    stub = FakeStub(
        ClaimSandbox=[exhausted("busy"), claim],
        CreateSandbox=[exhausted("busy"), create],
    )
    with make_client(stub) as client:
        client.claim("python", on_exit="keep")
        client.create("python", on_exit="keep")
    assert len(stub.calls["ClaimSandbox"]) == 2
    assert len(stub.calls["CreateSandbox"]) == 2


def test_get_does_not_retry_resource_exhausted():
    stub = FakeStub(GetSandbox=[exhausted("too big"), sandbox_pb2.Sandbox()])
    with make_client(stub) as client, pytest.raises(sandpod.ResourceExhausted):
        client.get("x")
    assert len(stub.calls["GetSandbox"]) == 1
