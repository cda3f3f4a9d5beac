"""%%sandbox through a real IPython InteractiveShell against the real server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("IPython")

from integration.conftest import Server
from IPython.core.interactiveshell import InteractiveShell

import sandpod

pytestmark = pytest.mark.integration


@pytest.fixture
def shell(nb_server: Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("SANDPOD_ADDRESS", nb_server.address)
    monkeypatch.setenv("SANDPOD_PROGRESS", "0")
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "sandpod")
    try:
        yield ip
    finally:
        ip.run_line_magic("sandbox", "delete")  # every sandbox of this session
        ip.run_line_magic("unload_ext", "sandpod")


@pytest.fixture
def client(nb_server: Server) -> Iterator[sandpod.Client]:
    with sandpod.Client(nb_server.address, progress=False, timeout=120) as c:
        yield c


def unique_name() -> str:
    return f"magic-{uuid.uuid4().hex[:8]}"


def test_python_cell_in_the_sessions_sandbox(shell, capsys) -> None:
    shell.run_cell_magic("sandbox", "", "import sys\nprint(6 * 7)\nprint('oops', file=sys.stderr)")
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("[sandbox python-") and "claimed" in lines[0]
    name = lines[0].split()[1].rstrip("]")
    assert "42" in lines
    assert lines[-1].startswith(f"[sandbox {name}] exit code 0 in ")
    assert err == "oops\n"

    # the next cell runs in the same sandbox: its files are there
    shell.run_cell_magic("sandbox", "", "open('state.txt', 'w').write('kept')")
    shell.run_cell_magic("sandbox", "--shell --out r", "cat state.txt; echo; hostname")
    out, _ = capsys.readouterr()
    assert "claimed" not in out
    r = shell.user_ns["r"]
    assert isinstance(r, sandpod.CommandResult)
    assert r.stdout.splitlines() == ["kept", name]


def test_exit_code_check_env_and_timeout(shell, capsys) -> None:
    shell.run_cell_magic("sandbox", "--shell", "echo bad >&2; exit 3")
    out, err = capsys.readouterr()
    assert "bad\n" in err
    assert "] exit code 3 in " in err.splitlines()[-1]  # a failure's status goes to stderr

    with pytest.raises(sandpod.CommandFailed) as info:
        shell.run_cell_magic("sandbox", "--check", "raise SystemExit(5)")
    assert info.value.exit_code == 5

    shell.run_cell_magic(
        "sandbox",
        "-e GREETING=hi -e 'WHO=the sandbox' -q",
        "import os\nprint(os.environ['GREETING'], os.environ['WHO'])",
    )
    out, _ = capsys.readouterr()
    assert out.splitlines()[-1] == "hi the sandbox"  # -q: no status line

    shell.run_cell_magic("sandbox", "--shell --timeout 1", "sleep 30")
    _, err = capsys.readouterr()
    assert "timed out after" in err


def test_named_sandbox_survives_a_kernel_restart(shell, client, capsys) -> None:
    name = unique_name()
    shell.run_cell_magic("sandbox", f"{name} --ttl 600", "open('notes.txt', 'w').write('day 1')")
    out, _ = capsys.readouterr()
    assert f"[sandbox {name}] created" in out
    assert client.get(name).status == sandpod.Phase.RUNNING

    # "restart the kernel": a new session knows nothing; the name finds the sandbox
    shell.run_line_magic("unload_ext", "sandpod")
    client.get(name).suspend()
    shell.run_line_magic("load_ext", "sandpod")
    shell.run_cell_magic("sandbox", f"{name} --out r", "print(open('notes.txt').read())")
    out, _ = capsys.readouterr()
    assert f"[sandbox {name}] reconnected and resumed" in out
    assert shell.user_ns["r"].stdout == "day 1\n"

    shell.run_line_magic("sandbox", "")
    out, _ = capsys.readouterr()
    assert name in out
    shell.run_line_magic("sandbox", f"delete {name}")
    out, _ = capsys.readouterr()
    assert f"[sandbox {name}] deleted" in out
    with pytest.raises(sandpod.SandboxNotFound):
        client.get(name)


def test_usage_errors(shell) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="unrecognized arguments"):
        shell.run_cell_magic("sandbox", "--nope", "print(1)")
    with pytest.raises(UsageError, match="unknown action"):
        shell.run_line_magic("sandbox", "explode")
