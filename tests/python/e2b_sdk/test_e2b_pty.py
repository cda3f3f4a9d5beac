"""Terminals through E2B's SDK: create, send input, resize, kill."""

from __future__ import annotations

import pytest
from e2b import CommandExitException, PtySize


def test_pty_input_resize_exit(sbx) -> None:
    h = sbx.pty.create(PtySize(rows=24, cols=80))
    sbx.pty.send_stdin(h.pid, b"echo pty-$((40+2))\n")
    sbx.pty.resize(h.pid, PtySize(rows=31, cols=101))
    sbx.pty.send_stdin(h.pid, b"stty size; exit 5\n")
    out: list[bytes] = []
    with pytest.raises(CommandExitException) as e:
        h.wait(on_pty=out.append)
    assert e.value.exit_code == 5
    text = b"".join(out)
    assert b"pty-42" in text
    assert b"31 101" in text


def test_pty_kill(sbx) -> None:
    h = sbx.pty.create(PtySize(rows=24, cols=80))
    assert sbx.pty.kill(h.pid) is True
    with pytest.raises(CommandExitException):
        h.wait()
