"""Executes the notebooks under notebooks/ headless against a real `sandpod serve`.

Each notebook runs in a fresh ipykernel (nbclient, kernel "python3" of this
interpreter, its plots rendered by matplotlib's inline backend, which is Agg: no
display needed); a cell that raises fails the test. Stream outputs are merged and their
carriage returns applied, as Jupyter shows them, so a progress bar reads as its last state.
The server (conftest.py) has a warm pool big enough for the quick start and is purged at
the end, so no sandbox outlives the run.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import struct
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

from integration.conftest import REPO, Server  # noqa: E402
from nbclient.exceptions import CellExecutionError  # noqa: E402

import sandpod  # noqa: E402

pytestmark = pytest.mark.integration

NOTEBOOKS = REPO / "notebooks"
CELL_TIMEOUT = 300  # s: a loaded 2-core machine, cold starts included


@pytest.fixture
def kernel_env(nb_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kernel's environment; returns the notebook's working directory."""
    # Kernel "python3" is this interpreter's ipykernel, whatever kernels the machine has
    # installed: a spec written first on JUPYTER_PATH wins.
    from ipykernel.kernelspec import write_kernel_spec

    jupyter = tmp_path / "jupyter"
    write_kernel_spec(jupyter / "kernels" / "python3")
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch.setenv("SANDPOD_ADDRESS", nb_server.address)
    # progress bars as a user gets them: the client's default (on in a notebook)
    monkeypatch.delenv("SANDPOD_PROGRESS", raising=False)
    # the repository's package even where it is not installed (editable) in the venv
    paths = [str(REPO / "clients" / "python"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    workdir = tmp_path / "run"
    workdir.mkdir()
    return workdir


def run_notebook(path: Path, server: Server, workdir: Path) -> nbformat.NotebookNode:
    """Executes the notebook in a fresh kernel (which inherits our environment)."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        coalesce_streams=True,
    )
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name}: a cell raised:\n{err}\n--- server log ---\n{server.log_tail()}")
    return nb


def outputs_text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            elif "data" in out:
                parts.append(str(out["data"].get("text/plain", "")))
    return "\n".join(parts)


def stream_text(nb: nbformat.NotebookNode, name: str) -> str:
    return "\n".join(
        out.get("text", "")
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == name
    )


def leftover(server: Server) -> list[str]:
    with sandpod.Client(server.address, progress=False, timeout=60) as c:
        return [s.name for s in c.list()]


def test_quickstart(nb_server: Server, kernel_env: Path) -> None:
    nb = run_notebook(NOTEBOOKS / "quickstart.ipynb", nb_server, kernel_env)
    text = outputs_text(nb)
    assert "42" in text
    assert "exit code 0" in text  # the %%sandbox status line
    assert "ZeroDivisionError - division by zero" in text  # run_code's error
    check_sandbox_figure(nb)
    assert leftover(nb_server) == []  # it cleaned up after itself


def check_sandbox_figure(nb: nbformat.NotebookNode) -> None:
    """The run_code figure rendered in the notebook is a real PNG, and its bytes are the
    ones the sandbox rendered: the sha256 the sandbox computed of its own rendering (printed
    by the notebook) is the sha256 of the image the notebook shows."""
    pngs = [
        base64.b64decode(out["data"]["image/png"])
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert pngs, "the quick start shows no image"
    png = pngs[0]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    # figsize (6, 3) at 80 dpi, trimmed by bbox_inches="tight": at most 480 x 240
    assert 300 < width <= 480 and 150 < height <= 240, (width, height)
    printed = [
        line.split(":", 1)[1].strip()
        for line in stream_text(nb, "stdout").splitlines()
        if line.startswith("sha256 of the PNG made in the sandbox:")
    ]
    assert printed == [hashlib.sha256(png).hexdigest()]


def test_rl_rollouts(nb_server: Server, kernel_env: Path) -> None:
    nb = run_notebook(NOTEBOOKS / "rl_rollouts.ipynb", nb_server, kernel_env)
    text = stream_text(nb, "stdout")
    # The setup's state, as the base sandbox reported it before the snapshot.
    prints = re.findall(r"^snapshot fingerprint: ([0-9a-f]{64})$", text, re.M)
    assert len(prints) == 1, text
    fingerprint = prints[0]
    # Every episode says what it found when it started: the snapshot's files (their
    # hash) and nothing left in runs/ by an episode before it, in a fork as after a
    # restore (and, the baseline, after a cold setup of its own).
    episodes = re.findall(
        r"^(cold|fork|restore) +seed +(\d+) .* found ([0-9a-f]{16})  runs/ at start: (\d+)$",
        text,
        re.M,
    )
    kinds = [e[0] for e in episodes]
    assert (kinds.count("cold"), kinds.count("fork"), kinds.count("restore")) == (4, 8, 8), text
    assert len({seed for _, seed, _, _ in episodes}) == len(episodes)  # each its own seed
    assert {found for _, _, found, _ in episodes} == {fingerprint[:16]}, text
    assert {left for *_, left in episodes} == {"0"}, text
    assert "forks: 8 episodes, 8 started from the snapshot's state" in text
    assert "restore: 8 episodes, 8 started from the snapshot's state" in text
    assert "files an episode wrote, gone after restore: 8 of 8" in text
    # claim_many's progress bar, on by default in a notebook, kept there when done
    bars = [line for line in stream_text(nb, "stderr").splitlines() if "sandpod: claiming" in line]
    assert any("100%" in line and "4/4" in line for line in bars), bars
    # The timing table: one row per way, each with measured times (not a goal).
    rows = re.findall(r"^(cold|fork|restore): .*? +([\d.]+) s +([\d.]+) s +([\d.]+)x$", text, re.M)
    assert [r[0] for r in rows] == ["cold", "fork", "restore"], text
    assert all(float(per) > 0 and float(wall) >= float(per) for _, per, wall, _ in rows)
    assert (kernel_env / "rollout_timing.png").stat().st_size > 1000
    assert any(
        "image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", [])
    )
    assert leftover(nb_server) == []
    with sandpod.Client(nb_server.address, progress=False, timeout=60) as c:
        assert c.snapshots() == []  # the notebook deleted its snapshot
