import datetime as dt
import json

import pytest
from google.protobuf import json_format, timestamp_pb2

import sandpod
from sandpod import _base
from sandpod._models import OutputDecoder, label_selector, result_html, sandbox_html
from sandpod.v1 import exec_pb2, sandbox_pb2


def test_sandbox_info_from_pb():
    pb = sandbox_pb2.Sandbox(
        name="python-x",
        namespace="default",
        template="python",
        pool="python",
        labels={"run": "7"},
        phase=sandbox_pb2.PHASE_SUSPENDED,
        claimed=True,
        env_keys=["A"],
        shutdown_policy=sandbox_pb2.SHUTDOWN_POLICY_RETAIN,
        create_time=timestamp_pb2.Timestamp(seconds=1_700_000_000),
    )
    pb.conditions.add(type="Ready", status="False", reason="Suspended")
    info = sandpod.SandboxInfo.from_pb(pb)
    assert info.phase is sandpod.Phase.SUSPENDED
    assert info.labels == {"run": "7"}
    assert info.shutdown_policy is sandpod.ShutdownPolicy.RETAIN
    assert info.shutdown_time is None
    assert info.create_time == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc)
    assert info.condition("Ready").reason == "Suspended"
    assert info.condition("Nope") is None


def test_unknown_phase():
    assert sandpod.SandboxInfo.from_pb(sandbox_pb2.Sandbox()).phase is sandpod.Phase.UNKNOWN


def test_output_decoder_keeps_split_characters_whole():
    d = OutputDecoder()
    data = "日本".encode()
    texts = [d.feed("stdout", data[i : i + 1]).text for i in range(len(data))]
    assert "".join(texts) == "日本"
    res = d.result(exec_pb2.ExitStatus(exit_code=0))
    assert res.stdout == "日本" and res.stdout_bytes == data


def test_exit_code_zero_is_present_in_json():
    # exit_code has explicit presence: a success shows in JSON (grpcurl) as exitCode 0.
    status = exec_pb2.ExitStatus(exit_code=0)
    assert status.HasField("exit_code")
    assert json.loads(json_format.MessageToJson(status)) == {"exitCode": 0}
    # without it (an older server) the exit code is 0 all the same
    assert not exec_pb2.ExitStatus().HasField("exit_code")
    assert sandpod.CommandResult.from_exit(exec_pb2.ExitStatus(), b"", b"").exit_code == 0


def test_command_result_text_and_flags():
    r = sandpod.CommandResult(exit_code=0, stdout_bytes=b"\xffok", stdout_truncated=True)
    assert r.stdout == "\ufffdok"
    assert r.ok and r.check() is r
    assert "exit_code=0" in repr(r)


def test_html_escapes_everything():
    r = sandpod.CommandResult(exit_code=1, stdout_bytes=b"<script>", command="echo <b>")
    page = result_html(r)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert r._repr_html_() == page
    info = sandpod.SandboxInfo(name="<x>", namespace="d", labels={"a": "<b>"})
    assert "<x>" not in sandbox_html(info) and "&lt;b&gt;" in sandbox_html(info)


def test_label_selector():
    assert label_selector(None) == ""
    assert label_selector({"b": "2", "a": "1"}) == "a=1,b=2"
    assert label_selector("team=rl,run!=3") == "team=rl,run!=3"


def test_exec_start_shell_and_argv():
    req, text = _base.exec_start(
        "s", "ns", "echo hi | wc -c", env=None, cwd="sub", timeout=2.5, max_output_bytes=None
    )
    assert req.start.shell == "echo hi | wc -c" and text == "echo hi | wc -c"
    assert req.start.working_dir == "sub"
    assert req.start.timeout.seconds == 2 and req.start.timeout.nanos == 500_000_000
    req, text = _base.exec_start(
        "s",
        "ns",
        ["python3", "-c", "print(1)"],
        env={"A": "b"},
        cwd=None,
        timeout=None,
        max_output_bytes=10,
    )
    assert list(req.start.argv) == ["python3", "-c", "print(1)"]
    assert text == "python3 -c 'print(1)'"
    assert not req.start.HasField("timeout")
    assert req.start.max_output_bytes == 10
    for bad in ("", "   ", []):
        with pytest.raises(ValueError):
            _base.exec_start(
                "s", "ns", bad, env=None, cwd=None, timeout=None, max_output_bytes=None
            )


def test_timeouts_and_sentinel(monkeypatch):
    monkeypatch.delenv("SANDPOD_ADDRESS", raising=False)
    s = _base.ClientSettings.resolve(None, None, False, None, 30, None, False, 30.0, None)
    assert s.address == "127.0.0.1:50051" and s.namespace == "default"
    assert s.timeout_for(_base.USE_CLIENT_DEFAULT) == 30
    assert s.timeout_for(None) is None
    assert s.timeout_for(dt.timedelta(minutes=1)) == 60
    with pytest.raises(ValueError):
        s.timeout_for(0)
    assert repr(sandpod.USE_CLIENT_DEFAULT) == "USE_CLIENT_DEFAULT"


def test_settings_from_environment(monkeypatch):
    monkeypatch.setenv("SANDPOD_ADDRESS", "sandpod.example:443")
    monkeypatch.setenv("SANDPOD_TOKEN", "s3cret")
    s = _base.ClientSettings.resolve(None, None, False, None, 30, None, False, 30.0, None)
    assert s.address == "sandpod.example:443"
    assert s.metadata() == (("authorization", "Bearer s3cret"),)
    s = _base.ClientSettings.resolve("h:1", "t", False, "ns", 30, None, False, 30.0, None)
    assert s.address == "h:1" and s.metadata() == (("authorization", "Bearer t"),)
    assert s.namespace == "ns"


def test_channel_options_have_keepalive():
    opts = dict(_base.channel_options_for(30.0, [("grpc.primary_user_agent", "x")]))
    assert opts["grpc.keepalive_time_ms"] == 30_000
    assert opts["grpc.http2.max_pings_without_data"] == 0
    assert opts["grpc.primary_user_agent"] == "x"
    assert "grpc.keepalive_time_ms" not in dict(_base.channel_options_for(0, None))


def test_progress_is_off_when_not_a_terminal(monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _base.auto_progress() is False
    monkeypatch.setenv("SANDPOD_PROGRESS", "0")
    assert _base.auto_progress() is False
