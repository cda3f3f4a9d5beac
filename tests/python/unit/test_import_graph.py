"""The layers of the sandpod package, checked on its import graph (read with ``ast``, so
an import that only runs later, inside a function, counts too).

Bottom to top, as httpcore lays out its primitives and its connections:

0. primitives, leaves: data, errors, pure logic and the I/O primitives of each flavour
   (``_async_io``/``_sync_io``: stream reads, conditions, workers, channels, the exec
   sender); they import nothing above them, not even for type hints;
1. handles written once for both flavours (``_process``, ``_watch``, ...);
2. the operations of each flavour that open handles (``_async_ops``/``_sync_ops``);
3. the clients (``_async_client`` and the ``_client`` generated from it);
4. the front: ``__init__`` and the IPython magic.

An import goes to its own layer or one below, never up, and the imports that run form no
cycle. The one way up is a type hint: a handle may name the client or sandbox that owns
it under ``if TYPE_CHECKING:`` (``AsyncCodeContext.sandbox`` is an ``AsyncSandbox``).
No module imports another from inside a function to dodge a cycle.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import sandpod

PACKAGE = Path(sandpod.__file__).resolve().parent

LAYERS: list[set[str]] = [
    {
        "_version",
        "_retry",
        "_errors",
        "_code",
        "_models",
        "_base",
        "_progress",
        "_async_io",
        "_sync_io",
    },
    {
        "_exec_stream",
        "_process",
        "_terminal",
        "_watch",
        "_filewatch",
        "_code_client",
        "_lease",
        "_snapshots",
    },
    {"_async_ops", "_sync_ops"},
    {"_async_client", "_client"},
    {"__init__", "_magic"},
]
#: What a handle may name in its type hints although it sits above them.
OWNERS = {"_async_client", "_client"}


@dataclasses.dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module of the package, dotted
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``
    local: bool  # inside a function or class body


def module_name(package: Path, path: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def imports_of(package: Path) -> list[Import]:
    """Every import of a module of ``package`` by a module of ``package``."""
    paths = {module_name(package, p): p for p in sorted(package.rglob("*.py"))}
    modules = set(paths)
    found: list[Import] = []

    def resolve(source: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names if a.name in modules]
        if node.level:
            base = source.split(".")
            if paths[source].name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            if node.module:
                base = [*base, *node.module.split(".")]
            stem = ".".join(base)
        else:
            stem = node.module or ""
        targets = []
        for alias in node.names:
            sub = f"{stem}.{alias.name}"
            if sub in modules:
                targets.append(sub)  # from . import _base: the module itself
            elif stem in modules:
                targets.append(stem)  # from ._base import Timeout
        return targets

    for source, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))

        def walk(node: ast.AST, type_only: bool, local: bool, source: str = source) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import | ast.ImportFrom):
                    for target in resolve(source, child):
                        found.append(Import(source, target, child.lineno, type_only, local))
                elif isinstance(child, ast.If) and _is_type_checking(child.test):
                    for stmt in child.body:
                        walk(ast.Module(body=[stmt], type_ignores=[]), True, local)
                    for stmt in child.orelse:
                        walk(ast.Module(body=[stmt], type_ignores=[]), type_only, local)
                else:
                    nested = isinstance(
                        child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
                    )
                    walk(child, type_only, local or nested)

        walk(tree, False, False)
    return found


def cycles(edges: list[Import]) -> list[list[str]]:
    """The import cycles of ``edges``: each strongly connected set of two or more
    modules (or a module importing itself), sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(out)


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return layer_of(f"{module}.__init__")
    if parts[1] == "v1":
        return 0  # the generated protobuf stubs
    for i, names in enumerate(LAYERS):
        if parts[1] in names:
            return i
    raise AssertionError(f"{module} is in no layer of {__name__}.LAYERS: place it")


def upward(edges: list[Import]) -> list[Import]:
    """The imports that go above their module's layer (a handle's type hint naming its
    owner excepted)."""
    bad = []
    for e in edges:
        if layer_of(e.target) <= layer_of(e.source):
            continue
        owner = e.target.split(".")[-1] in OWNERS
        if e.type_only and owner and layer_of(e.source) > 0:
            continue
        bad.append(e)
    return bad


EDGES = imports_of(PACKAGE)


def test_no_module_imports_the_package_from_inside_a_function():
    local = [f"{e.source}:{e.line} imports {e.target}" for e in EDGES if e.local]
    assert local == []


def test_the_imports_that_run_form_no_cycle():
    assert cycles([e for e in EDGES if not e.type_only]) == []


def test_the_primitives_import_nothing_above_them_even_for_types():
    primitives = [e for e in EDGES if layer_of(e.source) == 0]
    assert [e for e in primitives if layer_of(e.target) != 0] == []
    assert cycles(primitives) == []


def test_every_import_goes_to_its_layer_or_below():
    assert [f"{e.source}:{e.line} imports {e.target}" for e in upward(EDGES)] == []


def test_the_graph_is_read_whole():
    # The checks above see the real package: its modules, both flavours, and the
    # imports that matter (a leaf the clients build on; a handle under its ops).
    pairs = {(e.source, e.target) for e in EDGES}
    assert ("sandpod._async_client", "sandpod._async_ops") in pairs
    assert ("sandpod._client", "sandpod._sync_ops") in pairs
    assert ("sandpod._async_ops", "sandpod._process") in pairs
    assert ("sandpod._exec_stream", "sandpod._async_io") in pairs
    assert ("sandpod._models", "sandpod.v1.exec_pb2") in pairs
    for path in PACKAGE.glob("_*.py"):
        layer_of(f"sandpod.{path.stem}")


# The checker itself, on small packages written for it: each rule can fail.


def write(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkg"
    for name, text in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


CASES = {
    "a function-local import that hides a cycle": {
        "files": {
            "__init__.py": "",
            "_io.py": "def open():\n    from ._watch import Watch\n    return Watch()\n",
            "_watch.py": "from . import _io\n\nclass Watch: ...\n",
        },
        "local": ["pkg._io:2 imports pkg._watch"],
        "cycles": [["pkg._io", "pkg._watch"]],
        "runtime_cycles": [["pkg._io", "pkg._watch"]],
    },
    "a cycle through type hints only": {
        "files": {
            "__init__.py": "",
            "_errors.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ._models import Result\n"
            ),
            "_models.py": "from ._errors import Failed\n",
        },
        "local": [],
        "cycles": [["pkg._errors", "pkg._models"]],
        "runtime_cycles": [],
    },
    "layered, with a subpackage and absolute imports": {
        "files": {
            "__init__.py": "from ._client import Client\n",
            "_client.py": "from . import _io\nfrom .v1 import x_pb2\nimport pkg._io\n",
            "_io.py": "from pkg.v1 import x_pb2\n",
            "v1/__init__.py": "",
            "v1/x_pb2.py": "from pkg.v1 import y_pb2\n",
            "v1/y_pb2.py": "",
        },
        "local": [],
        "cycles": [],
        "runtime_cycles": [],
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_checker_finds_what_it_must(tmp_path: Path, name: str):
    case = CASES[name]
    edges = imports_of(write(tmp_path, case["files"]))
    assert [f"{e.source}:{e.line} imports {e.target}" for e in edges if e.local] == case["local"]
    assert cycles(edges) == case["cycles"]
    assert cycles([e for e in edges if not e.type_only]) == case["runtime_cycles"]


def test_an_import_up_the_layers_is_refused():
    def edge(source: str, target: str, type_only: bool = False) -> Import:
        return Import(f"sandpod.{source}", f"sandpod.{target}", 1, type_only, False)

    assert upward([edge("_process", "_exec_stream"), edge("_async_ops", "_watch")]) == []
    # a handle may name its owner in a type hint, a primitive may not
    assert upward([edge("_snapshots", "_async_client", type_only=True)]) == []
    bad = [
        edge("_async_io", "_watch"),
        edge("_async_io", "_async_client", type_only=True),
        edge("_base", "_process", type_only=True),
        edge("_snapshots", "_async_client"),
        edge("_watch", "_async_ops", type_only=True),
    ]
    assert upward(bad) == bad
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("sandpod._new_module")
