"""The %%sandbox magic's pieces that need no server: parsing, rendering, sessions."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import grpc
import pytest

import sandpod
from sandpod import _magic
from sandpod._magic import (
    CellOptions,
    MagicUsageError,
    SandboxSession,
    parse_cell_args,
    parse_line_args,
    status_line,
)


def test_defaults():
    opts = parse_cell_args("")
    assert opts == CellOptions()
    assert opts.key == "@python"
    assert opts.command() == ["python3", "-"]
    assert not opts.has_timeout


def test_every_option():
    opts = parse_cell_args(
        "my-box --template gpu --timeout 2.5 --ttl 3600 -e A=1 --env 'B=two words' "
        "-e C= --cwd work --check --out res -q"
    )
    assert opts.name == "my-box"
    assert opts.key == "my-box"
    assert opts.template == "gpu"
    assert (opts.timeout, opts.has_timeout) == (2.5, True)
    assert opts.ttl == 3600
    assert opts.env == {"A": "1", "B": "two words", "C": ""}
    assert opts.cwd == "work"
    assert opts.check and opts.quiet
    assert opts.out == "res"


def test_shell_and_interpreter():
    assert parse_cell_args("--shell").command() == ["/bin/sh", "-s"]
    assert parse_cell_args("--python 'python3 -X dev'").command() == ["python3", "-X", "dev", "-"]
    assert parse_cell_args("--template node").key == "@node"


def test_zero_timeout_means_none():
    opts = parse_cell_args("--timeout 0")
    assert opts.has_timeout and opts.timeout is None


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("--nope", "unrecognized arguments"),
        ("a b", "unrecognized arguments"),
        ("--timeout soon", "not a number"),
        ("--ttl -1", "must not be negative"),
        ("-e NOEQUALS", "KEY=VALUE"),
        ("-e =x", "KEY=VALUE"),
        ("--out 1x", "variable name"),
        ("--shell --python pypy3", "do not go together"),
        ("--python ''", "must not be empty"),
        ("'unclosed", "quotation"),
        ("--help", "Run the cell"),
    ],
)
def test_bad_arguments(line, match):
    with pytest.raises(MagicUsageError, match=match):
        parse_cell_args(line)


def test_line_actions():
    assert parse_line_args("") == ("list", [])
    assert parse_line_args("list") == ("list", [])
    assert parse_line_args("delete") == ("delete", [])
    assert parse_line_args("delete a b") == ("delete", ["a", "b"])
    with pytest.raises(MagicUsageError, match="unknown action"):
        parse_line_args("frobnicate")


def test_status_line():
    ok = sandpod.CommandResult(exit_code=0, duration=0.123)
    assert status_line("sb-1", ok) == "[sandbox sb-1] exit code 0 in 0.12 s"
    failed = sandpod.CommandResult(exit_code=3, duration=1.0, stderr_truncated=True)
    assert status_line("x", failed) == "[sandbox x] exit code 3 in 1.00 s (stderr truncated)"
    killed = sandpod.CommandResult(exit_code=-1, signal=9, duration=2)
    assert status_line("x", killed) == "[sandbox x] killed by signal 9 after 2.00 s"
    late = sandpod.CommandResult(exit_code=-1, signal=9, timed_out=True, duration=5)
    assert status_line("x", late) == "[sandbox x] timed out after 5.00 s (killed)"


# --- the session, over a fake client ------------------------------------------------


def not_found(name: str) -> sandpod.SandboxNotFound:
    return sandpod.SandboxNotFound(f"sandbox {name!r} not found", code=grpc.StatusCode.NOT_FOUND)


class FakeSandbox:
    def __init__(self, name: str, status: sandpod.Phase = sandpod.Phase.RUNNING, warm=None):
        self.name = name
        self.status = status
        self.warm = warm
        self.runs: list[dict] = []
        self.deleted = False
        self.gone = False
        self.result = sandpod.CommandResult(
            exit_code=0, stdout_bytes=b"out", stderr_bytes=b"err\n", duration=0.5
        )

    def run(self, cmd, **kwargs):
        if self.gone:
            raise not_found(self.name)
        self.runs.append({"cmd": cmd, **kwargs})
        on_output = kwargs["on_output"]
        on_output(sandpod.Output("stdout", b"out", "out"))
        on_output(sandpod.Output("stderr", b"err\n", "err\n"))
        return self.result

    def resume(self):
        self.status = sandpod.Phase.RUNNING

    def delete(self):
        self.deleted = True


class FakeClient:
    def __init__(self):
        self.existing: dict[str, FakeSandbox] = {}
        self.calls: list[tuple] = []
        self.closed = False

    def claim(self, template, *, ttl, on_exit):
        self.calls.append(("claim", template, ttl, on_exit))
        return FakeSandbox(f"{template}-{len(self.calls)}", warm=True)

    def get(self, name, *, on_exit):
        self.calls.append(("get", name, on_exit))
        if name not in self.existing:
            raise not_found(name)
        return self.existing[name]

    def create(self, template, *, name, ttl, on_exit):
        self.calls.append(("create", template, name, ttl, on_exit))
        sb = FakeSandbox(name)
        self.existing[name] = sb
        return sb

    def close(self):
        self.closed = True


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient()


@pytest.fixture
def session(fake) -> SandboxSession:
    return SandboxSession(lambda: fake)  # type: ignore[arg-type, return-value]


def run(session: SandboxSession, line: str, source: str = "print(1)"):
    out, err = io.StringIO(), io.StringIO()
    result = session.run_cell(parse_cell_args(line), source, out, err)
    return result, out.getvalue(), err.getvalue()


def test_first_cell_claims_then_reuses(session, fake):
    result, out, err = run(session, "")
    assert result.exit_code == 0
    assert out == (
        "[sandbox python-1] claimed from the warm pool\n"
        "out\n"
        "[sandbox python-1] exit code 0 in 0.50 s\n"
    )
    assert err == "err\n"
    run(session, "--shell", "ls")
    assert [c[0] for c in fake.calls] == ["claim"]  # one sandbox for the session
    sb = session.sandboxes["@python"]
    assert sb.runs[0]["cmd"] == ["python3", "-"] and sb.runs[0]["stdin"] == "print(1)"
    assert sb.runs[1]["cmd"] == ["/bin/sh", "-s"] and sb.runs[1]["stdin"] == "ls"
    assert "timeout" not in sb.runs[0]  # the client's default


def test_run_arguments(session, fake):
    run(session, "--timeout 0 -e A=1 --cwd w --ttl 60")
    assert fake.calls == [("claim", "python", 60.0, "keep")]
    sb = session.sandboxes["@python"]
    assert sb.runs[0]["timeout"] is None
    assert sb.runs[0]["env"] == {"A": "1"}
    assert sb.runs[0]["cwd"] == "w"


def test_named_creates_or_reconnects(session, fake):
    _, out, _ = run(session, "box --template gpu --ttl 10")
    assert "[sandbox box] created" in out
    assert fake.calls == [("get", "box", "keep"), ("create", "gpu", "box", 10.0, "keep")]

    fresh = SandboxSession(lambda: fake)  # type: ignore[arg-type, return-value]
    fake.existing["box"].status = sandpod.Phase.SUSPENDED
    _, out, _ = run(fresh, "box")
    assert "[sandbox box] reconnected and resumed" in out
    assert fake.existing["box"].status == sandpod.Phase.RUNNING


def test_failure_status_goes_to_stderr(session, fake):
    run(session, "")
    sb = session.sandboxes["@python"]
    sb.result = sandpod.CommandResult(exit_code=2, stdout_bytes=b"out", duration=1)
    _, out, err = run(session, "")
    assert "exit code" not in out
    assert err.endswith("[sandbox python-1] exit code 2 in 1.00 s\n")
    _, out, err = run(session, "-q")
    assert "[sandbox" not in out + err


def test_a_vanished_sandbox_is_forgotten(session, fake):
    run(session, "")
    session.sandboxes["@python"].gone = True
    with pytest.raises(sandpod.SandboxNotFound):
        run(session, "")
    assert session.sandboxes == {}
    run(session, "")  # claims a new one
    assert [c[0] for c in fake.calls] == ["claim", "claim"]


def test_list_and_delete(session, fake):
    assert "no sandboxes" in session.list_lines()[0]
    run(session, "")
    run(session, "named")
    assert session.list_lines() == ["python-1  Running  (default for python)", "named  Running"]
    fake.existing["other"] = FakeSandbox("other")
    assert session.delete(["named", "other"]) == ["other", "named"]
    assert fake.existing["other"].deleted and fake.existing["named"].deleted
    assert list(session.sandboxes) == ["@python"]
    claimed = session.sandboxes["@python"]
    assert session.delete([]) == ["python-1"]
    assert claimed.deleted and session.sandboxes == {}


def test_client_is_made_lazily_and_closed(fake):
    made = []
    session = SandboxSession(lambda: made.append(1) or fake)  # type: ignore[arg-type, return-value]
    assert made == []
    assert session.client is fake and session.client is fake
    assert made == [1]
    session.close()
    assert fake.closed


# --- the extension entry points -------------------------------------------------------


def test_importing_sandpod_does_not_import_ipython():
    import subprocess

    code = "import sys, sandpod; print('IPython' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_load_registers_one_line_cell_magic(fake):
    pytest.importorskip("IPython")
    registered = {}

    def register_magic_function(func, magic_kind, magic_name):
        registered[magic_name] = (func, magic_kind)

    ip = SimpleNamespace(register_magic_function=register_magic_function, user_ns={})
    sandpod.load_ipython_extension(ip)
    func, kind = registered["sandbox"]
    assert kind == "line_cell"
    assert "--shell" in func.__doc__
    session = ip._sandpod_session
    session._client_factory = lambda: fake
    func("--out res -q", "print(1)")
    assert ip.user_ns["res"].stdout == "out"
    sandpod.load_ipython_extension(ip)  # loading again keeps the session
    assert ip._sandpod_session is session
    session.client  # noqa: B018 - make the client
    sandpod.unload_ipython_extension(ip)
    assert fake.closed and not hasattr(ip, "_sandpod_session")
    assert _magic.DEFAULT_TEMPLATE == "python"
