"""E2B's code interpreter SDK over sandpod's run_code contexts: state between
cells, text results, PNG figures, errors, contexts; sync and async."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator

import pytest
from e2b_code_interpreter import AsyncSandbox, Sandbox

from .conftest import TEMPLATE


@pytest.fixture
def ci(e2b_server) -> Iterator[Sandbox]:
    sb = Sandbox.create(TEMPLATE)
    yield sb
    sb.kill()


def test_state_text_and_logs(ci) -> None:
    assert ci.run_code("x = 41").error is None
    ex = ci.run_code("print('hello'); x + 1")
    assert ex.text == "42"
    assert ex.logs.stdout == ["hello\n"]
    assert ex.execution_count == 2


def test_png_from_matplotlib(ci) -> None:
    ex = ci.run_code(
        "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3]); plt.show()"
    )
    assert ex.error is None
    pngs = [r.png for r in ex.results if r.png]
    assert len(pngs) == 1
    assert base64.b64decode(pngs[0]).startswith(b"\x89PNG\r\n\x1a\n")


def test_error_name_value_traceback(ci) -> None:
    seen = []
    ex = ci.run_code("def f():\n    return 1/0\nf()", on_error=seen.append)
    assert (ex.error.name, ex.error.value) == ("ZeroDivisionError", "division by zero")
    assert "return 1/0" in ex.error.traceback
    assert seen == [ex.error]


def test_contexts(ci) -> None:
    ctx = ci.create_code_context()
    assert ci.run_code("y = 'mine'", context=ctx).error is None
    assert ci.run_code("y", context=ctx).text == "'mine'"
    assert ci.run_code("'y' in dir()").text == "False"  # the default context is apart
    assert ctx.id in [c.id for c in ci.list_code_contexts()]
    ci.restart_code_context(ctx)
    assert ci.run_code("y", context=ctx).error.name == "NameError"
    ci.remove_code_context(ctx)
    assert ctx.id not in [c.id for c in ci.list_code_contexts()]


def test_other_languages_name_the_limit(ci) -> None:
    with pytest.raises(Exception, match=r"(?i)language"):
        ci.run_code("console.log(1)", language="javascript")


def test_async_code_interpreter(e2b_server) -> None:
    async def main() -> None:
        sb = await AsyncSandbox.create(TEMPLATE)
        try:
            await sb.run_code("a = [1, 2]")
            ex = await sb.run_code("sum(a)")
            assert ex.text == "3"
        finally:
            await sb.kill()

    asyncio.run(main())
