"""run_code against the real server: state kept between cells, rich results made in the
sandbox, errors, timeouts, dead contexts and bad input."""

from __future__ import annotations

import asyncio
import struct
import time

import pytest

import sandpod

pytestmark = pytest.mark.integration


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first, right after the magic)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:16]
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_state_is_kept_between_cells(sandbox):
    ex = sandbox.run_code("import numpy as np; x = np.arange(3)")
    assert ex.ok and ex.results == [] and ex.text is None
    assert sandbox.run_code("x.sum()").text == "3"
    assert sandbox.run_code("x = x * 2\nx.tolist()").text == "[0, 2, 4]"
    ex = sandbox.run_code("print('out'); import sys; print('err', file=sys.stderr); 6 * 7")
    assert (ex.stdout, ex.stderr, ex.text) == ("out\n", "err\n", "42")
    assert ex.context_id == "default" and ex.execution_count == 4


def test_output_streams_to_callbacks_as_it_comes(sandbox):
    # The cell prints, then waits for a file that only the on_stdout callback writes:
    # it ends early only if its first line reached us while it was still running.
    code = (
        "import os, time\n"
        "print('first', flush=True)\n"
        "end = time.monotonic() + 120\n"
        "while not os.path.exists('go') and time.monotonic() < end:\n"
        "    time.sleep(0.01)\n"
        "print('second' if os.path.exists('go') else 'never streamed')"
    )

    def on_stdout(text: str) -> None:
        if "first" in text:
            sandbox.files.write("go", "")

    ex = sandbox.run_code(code, on_stdout=on_stdout, timeout=300)
    assert ex.stdout == "first\nsecond\n"


def test_matplotlib_figure_comes_back_as_png(sandbox):
    code = (
        "import matplotlib.pyplot as plt\n"
        "fig = plt.figure(figsize=(4, 3), dpi=50)\n"
        "plt.plot([1, 3, 2])\n"
        "import os; open('drawn-by', 'w').write(str(os.getpid()))\n"
    )
    ex = sandbox.run_code(code)
    assert ex.ok, ex.error
    [fig] = [r for r in ex.results if r.png is not None]
    assert not fig.is_main_result
    # bbox_inches="tight" trims the margins: at most the 200 x 150 canvas.
    w, h = png_size(fig.png)
    assert 100 < w <= 200 and 75 < h <= 150, (w, h)
    # Drawn by the sandbox's interpreter (its pid is in the sandbox's file), and the
    # figure was closed: a second cell shows no figure.
    assert sandbox.files.read_text("drawn-by").isdigit()
    assert not [r for r in sandbox.run_code("1").results if r.png is not None]
    bundle = fig._repr_mimebundle_()
    assert isinstance(bundle["image/png"], str) and bundle["image/png"].startswith("iVBOR")


def test_display_html_and_rich_reprs(sandbox):
    ex = sandbox.run_code(
        "class Card:\n"
        "    def _repr_html_(self): return '<b>hi</b>'\n"
        "    def _repr_markdown_(self): return '**hi**'\n"
        "    def __repr__(self): return 'Card()'\n"
        "display(Card())\n"
        "{'a': 1}"
    )
    shown, value = ex.results
    assert not shown.is_main_result and shown.html == "<b>hi</b>" and shown.markdown == "**hi**"
    assert shown.text == "Card()"
    assert value.is_main_result and value.text == "{'a': 1}"


def test_error_has_name_value_traceback_and_raises(sandbox):
    ex = sandbox.run_code("def f():\n    return 1 / 0\n\nf()")
    assert not ex.ok and ex.error.name == "ZeroDivisionError"
    assert ex.error.value == "division by zero"
    assert "return 1 / 0" in ex.error.traceback and "<string>" not in ex.error.traceback
    with pytest.raises(sandpod.CodeRunError, match="ZeroDivisionError") as info:
        ex.raise_for_error()
    assert info.value.execution is ex
    # A failed cell loses nothing defined before it.
    sandbox.run_code("y = 5")
    sandbox.run_code("raise ValueError('no')")
    assert sandbox.run_code("y").text == "5"


def test_timeout_interrupts_and_keeps_state(sandbox):
    sandbox.run_code("x = 11")
    began = time.monotonic()
    ex = sandbox.run_code("import time\ntime.sleep(600)", timeout=1)
    assert time.monotonic() - began < 60
    assert ex.timed_out and not ex.context_lost and ex.error.name == "KeyboardInterrupt"
    assert sandbox.run_code("x").text == "11"


def test_context_killed_by_its_code_is_reported_and_replaced(sandbox):
    ctx = sandbox.code_context()
    ctx.run_code("z = 1")
    ex = ctx.run_code("import os; os._exit(3)")
    assert (
        ex.context_lost
        and ex.error.name == "ContextDied"
        and "exited with code 3" in ex.error.value
    )
    with pytest.raises(sandpod.CodeContextLost):
        ex.raise_for_error()
    with pytest.raises(sandpod.CodeContextNotFound) as info:
        ctx.run_code("z")
    assert info.value.reason == "CODE_CONTEXT_NOT_FOUND"
    # A segfault too; and a new context works.
    ex = sandbox.run_code("import ctypes; ctypes.string_at(0)")
    assert ex.context_lost and "signal 11" in ex.error.value
    assert sandbox.run_code("1 + 1").text == "2"
    with sandbox.code_context() as fresh:
        assert fresh.run_code("'z' in globals()").text == "False"


def test_contexts_are_isolated_listed_and_deleted(sandbox):
    with sandbox.code_context("left") as left, sandbox.code_context() as right:
        left.run_code("v = 'left'")
        right.run_code("v = 'right'")
        assert left.run_code("v").text == "'left'"
        assert right.run_code("v").text == "'right'"
        ids = {c.id for c in sandbox.code_contexts()}
        assert {"left", right.id} <= ids
        with pytest.raises(sandpod.AlreadyExists) as info:
            sandbox.code_context("left")
        assert info.value.reason == "CODE_CONTEXT_EXISTS"
        assert sandbox.code_context("left", create=False).run_code("v").text == "'left'"
    assert not {"left", right.id} & {c.id for c in sandbox.code_contexts()}


def test_bad_input_gets_clear_codes(sandbox):
    with pytest.raises(sandpod.CodeContextNotFound, match='"nope" not found') as info:
        sandbox.run_code("1", context="nope")
    assert info.value.reason == "CODE_CONTEXT_NOT_FOUND"
    with pytest.raises(sandpod.InvalidArgument, match="limit is 1048576") as info:
        sandbox.run_code("#" * (1 << 20 + 1))
    assert info.value.reason == "INVALID_CODE"
    with pytest.raises(sandpod.InvalidArgument, match='language: "ruby" is not supported') as info:
        sandbox.run_code("1", language="ruby")
    assert info.value.reason == "INVALID_CODE"
    with pytest.raises(sandpod.InvalidArgument, match="context_id") as info:
        sandbox.run_code("1", context="Not An Id")
    assert info.value.reason == "INVALID_CONTEXT_ID"


def test_unclaimed_pool_member_refuses_run_code(client):
    deadline = time.monotonic() + 60
    while not (
        members := [m for m in client.list(include_pool_members=True) if not m.info.claimed]
    ):
        assert time.monotonic() < deadline, "the session's warm pool shows no member"
        time.sleep(0.2)
    member = client.get(members[0].name, on_exit="keep")
    with pytest.raises(sandpod.FailedPrecondition, match="unclaimed member") as info:
        member.run_code("open('planted.txt', 'w').write('x')")
    assert info.value.reason == "UNCLAIMED_POOL_MEMBER"
    with pytest.raises(sandpod.FailedPrecondition, match="unclaimed member"):
        member.code_context()


def test_async_client_mirrors_run_code(server, labels):
    async def main() -> None:
        async with (
            sandpod.AsyncClient(server.address, timeout=120, progress=False) as client,
            await client.claim("python", labels=labels) as sb,
        ):
            await sb.run_code("import numpy as np; x = np.arange(3)")
            assert (await sb.run_code("x.sum()")).text == "3"
            async with await sb.code_context() as ctx:
                assert (await ctx.run_code("1 + 2")).text == "3"
                assert ctx.id in {c.id for c in await sb.code_contexts()}
            ex = await sb.run_code("1/0")
            with pytest.raises(sandpod.CodeRunError):
                ex.raise_for_error()

    asyncio.run(main())
