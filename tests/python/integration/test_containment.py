"""Hostile code through the Python client: the README's first session works
as written, and the escapes a user would try first are contained."""

from __future__ import annotations

import contextlib
import io
import re
import socket
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def readme_first_session() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("## A first Python session", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_readme_first_session_runs_unchanged(server):
    code = readme_first_session().replace("127.0.0.1:50051", server.address)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == "42 0\nkept across suspend\n"


def test_files_and_commands_share_one_path_space(sandbox):
    sandbox.files.write("/app/main.py", "print('hello from /app')")
    assert sandbox.run("python3 /app/main.py").stdout == "hello from /app\n"
    assert sandbox.run("pwd; echo $HOME").stdout == "/workspace\n/workspace\n"
    sandbox.run("echo written-by-a-command > made.txt")
    assert sandbox.files.read_text("/workspace/made.txt") == "written-by-a-command\n"


def test_hostile_code_is_contained(sandbox, server):
    port = server.address.rsplit(":", 1)[1]
    # What the sandbox must not see is there on the host.
    assert Path("/etc/shadow").exists()
    assert (server.state_dir / "state.db").is_file()
    with socket.create_connection(("127.0.0.1", int(port)), timeout=30):
        pass
    r = sandbox.run(
        "id -u; mount -o remount,rw / 2>&1; umount /tmp 2>&1; cat /etc/shadow 2>&1;"
        " cat /proc/1/environ 2>&1; ls " + str(server.state_dir) + " 2>&1;"
        ' python3 -c "import socket; s=socket.socket(); s.settimeout(5);'
        " print('api', s.connect_ex(('127.0.0.1', " + port + ')))"'
    )
    lines = r.stdout.splitlines()
    assert lines[0] == "1000"
    assert "must be superuser" in r.stdout or "Operation not permitted" in r.stdout
    assert "No such file or directory" in r.stdout  # no /etc/shadow, no state dir
    assert "Permission denied" in r.stdout  # the agent's environment
    assert lines[-1] == "api 111"  # refused: the sandbox's loopback is its own
    assert not any("state.db" in line for line in lines)
