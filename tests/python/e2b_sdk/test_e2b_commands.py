"""Commands through E2B's SDK: run, exit codes, env vars, cwd, background
commands with stdin, list, connect and kill, sync and async."""

from __future__ import annotations

import asyncio

import pytest
from e2b import AsyncSandbox, CommandExitException

from .conftest import TEMPLATE


def test_run_output_and_exit_code(sbx) -> None:
    r = sbx.commands.run("echo out; echo err >&2; pwd")
    assert (r.stdout, r.stderr, r.exit_code) == ("out\n/workspace\n", "err\n", 0)
    with pytest.raises(CommandExitException) as e:
        sbx.commands.run("echo bad >&2; exit 3")
    assert e.value.exit_code == 3
    assert e.value.stderr == "bad\n"


def test_env_vars_and_cwd(sbx) -> None:
    sbx.files.make_dir("sub")
    r = sbx.commands.run("echo $A-$B; pwd", envs={"A": "1", "B": "two"}, cwd="/home/user/sub")
    assert r.stdout == "1-two\n/workspace/sub\n"


def test_callbacks_stream_output(sbx) -> None:
    seen: list[str] = []
    sbx.commands.run("for i in 1 2 3; do echo $i; done", on_stdout=seen.append)
    assert "".join(seen) == "1\n2\n3\n"


def test_background_stdin_list_connect_kill(sbx) -> None:
    h = sbx.commands.run("cat", background=True, stdin=True)
    assert h.pid in [p.pid for p in sbx.commands.list()]
    sbx.commands.send_stdin(h.pid, "line one\n")
    sbx.commands.close_stdin(h.pid)
    assert h.wait().stdout == "line one\n"

    sleeper = sbx.commands.run("sleep 600", background=True)
    again = sbx.commands.connect(sleeper.pid)
    assert sbx.commands.kill(sleeper.pid) is True
    with pytest.raises(CommandExitException) as e:
        again.wait()
    assert e.value.exit_code == -1
    assert sleeper.pid not in [p.pid for p in sbx.commands.list()]
    assert sbx.commands.kill(sleeper.pid) is False


def test_command_without_stdin_reads_eof(sbx) -> None:
    # envd gives a command no standard input unless asked: cat ends at once.
    assert sbx.commands.run("cat; echo done", timeout=60).stdout == "done\n"


def test_async_commands(e2b_server) -> None:
    async def main() -> None:
        sb = await AsyncSandbox.create(TEMPLATE)
        try:
            r = await sb.commands.run("echo a; exit 0")
            assert r.stdout == "a\n"
            with pytest.raises(CommandExitException):
                await sb.commands.run("exit 7")
            out: list[str] = []
            h = await sb.commands.run(
                "read x; echo got $x", background=True, stdin=True, on_stdout=out.append
            )
            await sb.commands.send_stdin(h.pid, "it\n")
            assert (await h.wait()).exit_code == 0
            assert "".join(out) == "got it\n"
        finally:
            await sb.kill()

    asyncio.run(main())


def test_kill_sandbox_during_a_command(e2b_server) -> None:
    from e2b import Sandbox, SandboxException

    sb = Sandbox.create(TEMPLATE)
    h = sb.commands.run("sleep 600", background=True)
    sb.kill()
    with pytest.raises(SandboxException, match="killed or reached its end of life"):
        h.wait()


def test_sandbox_has_no_egress(sbx) -> None:
    # The test template's networkPolicy: a connection out is refused at once.
    with pytest.raises(CommandExitException) as e:
        sbx.commands.run(
            "python3 -c \"import socket; socket.create_connection(('192.0.2.1', 80), timeout=5)\"",
            timeout=60,
        )
    assert "Network is unreachable" in e.value.stderr
