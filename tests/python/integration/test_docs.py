"""Runs the code blocks of README.md and docs/python.md that are marked runnable.

A block is marked by an HTML comment on the line before its fence (GitHub does not
show it):

    <!-- runnable -->
    ```python
    ...
    ```

A document's marked blocks run in order in one IPython shell, as the cells of a
notebook would: they share a namespace, and ``%load_ext`` and ``%%sandbox`` work. They
talk to the session's server: ``127.0.0.1:50051`` in the code and ``SANDPOD_ADDRESS``
point at it. The Go blocks are run by tests/goclient/docs_test.go.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell

from .conftest import REPO, Server, make_client

pytestmark = pytest.mark.integration

MARKER = "<!-- runnable -->"
# How many runnable Python blocks each document has at least, so that losing the
# markers does not pass unseen.
DOCS = {"README.md": 1, "docs/python.md": 8}


@dataclass
class Block:
    line: int  # of the opening fence, 1-based
    lang: str
    code: str


def runnable_blocks(path: Path) -> list[Block]:
    """The blocks marked runnable in the Markdown file, in order."""
    lines = path.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        fence = lines[i + 1] if i + 1 < len(lines) else ""
        if not fence.lstrip().startswith("```"):
            pytest.fail(f"{path.name}:{i + 1}: {MARKER} must be followed by a code fence")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].lstrip().startswith("```"))
        code = textwrap.dedent("\n".join(lines[i + 2 : end])) + "\n"
        blocks.append(Block(i + 2, fence.strip().removeprefix("```").strip(), code))
    return blocks


def sandbox_names(server: Server) -> set[str]:
    with make_client(server) as client:
        return {sb.name for sb in client.list()}


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_runnable_python_blocks(
    doc: str, server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = [b for b in runnable_blocks(REPO / doc) if b.lang == "python"]
    assert len(blocks) >= DOCS[doc], f"{doc}: {len(blocks)} runnable Python blocks"
    monkeypatch.setenv("SANDPOD_ADDRESS", server.address)
    before = sandbox_names(server)
    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    try:
        for block in blocks:
            code = block.code.replace("127.0.0.1:50051", server.address)
            result = shell.run_cell(code, store_history=False)
            if not result.success:
                out, err = capsys.readouterr()
                error = result.error_before_exec or result.error_in_exec
                pytest.fail(f"{doc}:{block.line}: the block fails: {error!r}\n{out}\n{err}")
    finally:
        if "sandpod" in shell.extension_manager.loaded:
            shell.run_line_magic("sandbox", "delete")  # the %%sandbox session's sandboxes
            shell.run_line_magic("unload_ext", "sandpod")
    out, _ = capsys.readouterr()
    assert "42" in out  # each document's first example prints 6 * 7
    assert sandbox_names(server) == before, "the blocks left sandboxes behind"
