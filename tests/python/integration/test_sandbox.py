"""Claim, run, stream, stdin, timeouts, background processes and lifecycle, for real."""

from __future__ import annotations

import datetime as dt

import pytest

import sandpod

from .conftest import make_client


def test_claim_and_run(client, labels):
    with client.claim("python", labels=labels, env={"GREETING": "hi"}) as sb:
        assert sb.status is sandpod.Phase.RUNNING
        assert sb.info.template == "python" and sb.info.claimed
        assert sb.labels["test"] == labels["test"]
        assert sb.warm in (True, False)
        assert "GREETING" in sb.info.env_keys
        r = sb.run("echo $GREETING; echo oops >&2; exit 3")
        assert r.exit_code == 3 and not r.ok
        assert r.stdout == "hi\n" and r.stderr == "oops\n"
        assert r.stdout_bytes == b"hi\n"
        assert r.duration >= 0 and not r.timed_out
        assert not r.stdout_truncated and not r.stderr_truncated
        assert "exit 3" in r._repr_html_()
        assert sb.name in sb._repr_html_()
    assert client.list(labels=labels) == []


def test_run_argv_env_cwd(sandbox):
    sandbox.files.mkdir("work/sub")
    r = sandbox.run(
        ["python3", "-c", "import os, sys; print(os.getcwd().endswith('sub'), os.environ['X'])"],
        cwd="work/sub",
        env={"X": "y z"},
    )
    assert r.stdout == "True y z\n", r


def test_run_check_raises_command_failed(sandbox):
    with pytest.raises(sandpod.CommandFailed) as info:
        sandbox.run("echo out; echo err >&2; exit 7", check=True)
    assert info.value.exit_code == 7
    assert info.value.stdout == "out\n" and info.value.stderr == "err\n"
    assert sandbox.run("true", check=True).ok


def test_run_timeout_kills_the_command(sandbox):
    r = sandbox.run("echo started; sleep 60", timeout=1)
    assert r.timed_out and r.exit_code == -1
    assert r.stdout == "started\n"
    with pytest.raises(sandpod.CommandTimeout):
        sandbox.run("sleep 60", timeout=1, check=True)


def test_stdin(sandbox):
    assert sandbox.run("cat", stdin=b"bytes in").stdout == "bytes in"
    assert sandbox.run("wc -l", stdin="a\nb\nc\n").stdout.strip() == "3"
    big = b"x" * (3 << 20)
    assert sandbox.run("wc -c", stdin=big).stdout.strip() == str(len(big))
    # No stdin given: the command sees end-of-file, it does not hang.
    assert sandbox.run("cat").stdout == ""
    # A command that ends before reading all its input still reports its output.
    for _ in range(20):
        r = sandbox.run("head -c 3; exit 4", stdin=b"y" * (2 << 20))
        assert (r.stdout, r.exit_code) == ("yyy", 4)
        assert sandbox.run(["true"]).ok


def test_streaming_output(sandbox):
    script = (
        "import sys, time\n"
        "for i in range(5):\n"
        "    print(f'line {i}', flush=True)\n"
        "    print(f'err {i}', file=sys.stderr, flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    seen: list[sandpod.Output] = []
    with sandbox.start(["python3", "-c", script]) as proc:
        assert proc.pid > 0
        for out in proc:
            seen.append(out)
        result = proc.wait()
    assert result.exit_code == 0
    stdout = "".join(o.text for o in seen if o.stream == "stdout")
    stderr = "".join(o.text for o in seen if o.stream == "stderr")
    assert stdout == "".join(f"line {i}\n" for i in range(5)) == result.stdout
    assert stderr == "".join(f"err {i}\n" for i in range(5)) == result.stderr


def test_run_on_output_callback(sandbox):
    chunks: list[str] = []
    r = sandbox.run("for i in 1 2 3; do echo $i; done", on_output=lambda o: chunks.append(o.text))
    assert "".join(chunks) == r.stdout == "1\n2\n3\n"


def test_background_process_stdin_and_kill(sandbox):
    with sandbox.start("cat") as cat:
        cat.write_stdin("hello ")
        cat.write_stdin(b"world\n")
        cat.close_stdin()
        result = cat.wait(timeout=60)
    assert result.exit_code == 0 and result.stdout == "hello world\n"

    sleeper = sandbox.start("sleep 600")
    assert sleeper.running
    with pytest.raises(sandpod.SandboxTimeout):
        sleeper.wait(timeout=0.2)
    sleeper.kill()
    result = sleeper.wait(timeout=60)
    assert result.signal == 9 and result.exit_code == -1 and not result.ok


def test_background_process_runs_while_others_do(sandbox):
    server = sandbox.start(
        ["python3", "-c", "import time\nopen('ready','w').close()\ntime.sleep(600)"]
    )
    try:
        for _ in range(200):
            if sandbox.files.exists("ready"):
                break
            sandbox.run("sleep 0.05")
        assert sandbox.files.exists("ready")
        assert sandbox.run("echo concurrent").stdout == "concurrent\n"
    finally:
        server.terminate()
        assert server.wait(timeout=60).signal == 15


def test_suspend_and_resume_keep_files(sandbox):
    sandbox.files.write("notes/state.txt", "before suspend")
    sandbox.suspend()
    assert sandbox.status is sandpod.Phase.SUSPENDED
    assert sandbox.refresh().status is sandpod.Phase.SUSPENDED
    sandbox.resume()
    assert sandbox.status is sandpod.Phase.RUNNING
    assert sandbox.files.read_text("notes/state.txt") == "before suspend"
    assert sandbox.run("cat notes/state.txt").stdout == "before suspend"


def test_auto_resume_on_exec(sandbox):
    sandbox.suspend()
    assert sandbox.run("echo back").stdout == "back\n"
    assert sandbox.refresh().status is sandpod.Phase.RUNNING


def test_context_manager_can_suspend_or_keep(client, labels):
    with client.claim("python", labels=labels, on_exit="suspend") as sb:
        sb.files.write("f", "kept")
    again = client.get(sb.name)
    assert again.status is sandpod.Phase.SUSPENDED
    with client.get(sb.name, on_exit="keep") as kept:
        kept.resume()
    assert client.get(sb.name).files.read_text("f") == "kept"
    client.get(sb.name).delete()
    assert client.list(labels=labels) == []


def test_reconnect_by_name_from_a_second_client(server, client, labels):
    sb = client.claim("python", labels=labels, on_exit="keep")
    sb.files.write("hello.txt", "from the first client")
    sb.run("echo 42 > answer")
    client.close()
    with make_client(server) as second:
        again = second.get(sb.name)
        assert again.info.uid == sb.info.uid
        assert again.files.read_text("hello.txt") == "from the first client"
        assert again.run("cat answer").stdout == "42\n"
        [listed] = second.list(labels=labels)
        assert listed.name == sb.name
        again.delete()
        assert again.deleted and "status=Deleted" in repr(again)
        with pytest.raises(sandpod.SandboxNotFound):
            second.get(sb.name)


def test_extend_moves_the_shutdown_time(sandbox):
    sandbox.extend(ttl=dt.timedelta(hours=3))
    first = sandbox.shutdown_time
    assert first is not None
    assert first > dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)
    sandbox.extend(shutdown_time=first + dt.timedelta(hours=1))
    assert sandbox.refresh().shutdown_time is not None
    assert sandbox.shutdown_time > first


def test_create_cold_and_with_a_name(client, labels):
    name = f"mine-{labels['test']}"
    with client.create("python", name=name, labels=labels, ttl=600) as sb:
        assert sb.name == name and sb.status is sandpod.Phase.RUNNING
        assert not sb.info.pool
        assert sb.run("echo cold").stdout == "cold\n"
    with client.create("python", labels=labels, wait=False) as sb:
        sb.wait_until_running()
        assert sb.run("true").ok
    assert client.list(labels=labels) == []


def test_list_templates_and_pools(client):
    templates = {t.name: t for t in client.templates()}
    assert {"python", "cold"} <= templates.keys()
    # No ephemeral-storage limit: the local engine's default disk and inodes.
    assert templates["python"].disk_limit_bytes == 10 << 30
    assert templates["python"].inode_limit == (10 << 30) // (16 << 10)
    [pool] = [p for p in client.pools() if p.name == "python"]
    assert pool.template == "python" and pool.replicas == 5
    assert client.pool("python").replicas == 5


def test_watch_sees_a_sandbox_and_its_deletion(client, labels):
    sb = client.claim("python", labels=labels)
    with client.watch(labels=labels, timeout=120) as events:
        first = next(events)  # the initial ADDED event for the existing sandbox
        assert (first.type, first.sandbox.name) == ("ADDED", sb.name)
        sb.delete()
        types = []
        for ev in events:
            assert ev.sandbox.name == sb.name
            types.append(ev.type)
            if ev.type == "DELETED":
                break
    assert types[-1] == "DELETED"
