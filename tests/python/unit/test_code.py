"""The pure parts of run_code: decoding a RunCode stream into an Execution."""

import base64

import pytest

import sandpod
from sandpod._code import ExecutionDecoder, Result
from sandpod.v1 import code_pb2

Resp = code_pb2.RunCodeResponse
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def responses():

    return [
        Resp(stdout="caf\u00e9".encode()[:4]),  # a UTF-8 character split across chunks
        Resp(stdout="\u00e9".encode()[1:] + b"\n"),
        Resp(stderr=b"warn\n"),
        Resp(result=code_pb2.CodeResult(data={"image/png": PNG, "text/plain": b"<Figure>"})),
        Resp(
            result=code_pb2.CodeResult(
                data={"text/plain": b"3", "application/json": b'{"a": 1}'}, is_main_result=True
            )
        ),
        Resp(done=code_pb2.CodeDone(context_id="default", execution_count=4)),
    ]


def test_decoder_builds_the_execution_and_calls_back():
    seen = []
    dec = ExecutionDecoder(on_stdout=seen.append, on_result=lambda r: seen.append(r.formats))
    ends = [dec.feed(r) for r in responses()]
    assert ends == [False] * 5 + [True]
    ex = dec.execution
    assert ex.stdout == "caf\u00e9\n" and ex.stderr == "warn\n"
    assert ex.text == "3" and ex.ok and ex.context_id == "default" and ex.execution_count == 4
    assert ex.results[0].png == PNG and ex.results[0].text == "<Figure>"
    assert ex.results[1].json == {"a": 1}
    assert seen[-2:] == [["image/png", "text/plain"], ["application/json", "text/plain"]]
    assert ex.raise_for_error() is ex


def test_mimebundle_is_what_jupyter_expects():
    r = Result(data={"image/png": PNG, "text/plain": "fig"})
    bundle = r._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"]) == PNG
    assert r._repr_mimebundle_(include=["text/plain"]) == {"text/plain": "fig"}
    assert r._repr_mimebundle_(exclude=["text/plain"]).keys() == {"image/png"}


def test_raise_for_error_raises_the_documented_exceptions():

    dec = ExecutionDecoder()
    dec.feed(
        Resp(
            error=code_pb2.CodeError(
                name="ZeroDivisionError", value="division by zero", traceback="Traceback ..."
            )
        )
    )
    dec.feed(Resp(done=code_pb2.CodeDone(context_id="c")))
    with pytest.raises(sandpod.CodeRunError) as info:
        dec.execution.raise_for_error()
    assert info.value.name == "ZeroDivisionError" and "Traceback" in str(info.value)
    assert not isinstance(info.value, sandpod.CodeContextLost)

    dec = ExecutionDecoder()
    dec.feed(Resp(error=code_pb2.CodeError(name="ContextDied", value="gone")))
    dec.feed(Resp(done=code_pb2.CodeDone(context_id="c", context_lost=True)))
    with pytest.raises(sandpod.CodeContextLost):
        dec.execution.raise_for_error()
    assert "ContextDied" in dec.execution._repr_html_()


def test_context_not_found_reason_narrows_not_found():
    assert sandpod._errors.REASON_TO_ERROR["CODE_CONTEXT_NOT_FOUND"] is sandpod.CodeContextNotFound
    assert issubclass(sandpod.CodeContextNotFound, sandpod.NotFound)
