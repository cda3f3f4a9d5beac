"""The notebooks under notebooks/ are committed without outputs."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[3] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    names = {p.name for p in NOTEBOOKS}
    assert {"quickstart.ipynb", "rl_rollouts.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_stripped(path: Path):
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    dirty = [
        i
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} have outputs or an execution count; strip them "
        "(e.g. `jupyter nbconvert --clear-output --inplace` or nbstripout)"
    )
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3"
    assert "widgets" not in nb["metadata"]
