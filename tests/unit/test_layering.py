"""The packages of ``traincost`` import one another without cycles, the two front ends never each other, analysis
never draws, and only the command line uses the API; the bench never imports the tests.

A cycle between packages (``cost`` importing the scheduler that imports ``cost``) makes every change
on either side touch both; ``analysis`` computes the checks the plots and the report show, so it
must not depend on ``plots`` (matplotlib, seaborn) to do so. The two front ends are alternatives every later stage
reads alike: each imports what both use (``frontend/shared/``) and never the other, so that either changes alone. The
picture of the package graph in ``docs/architecture.md`` is generated from it (``python tests/unit/test_layering.py``
prints it).

Around the package, imports point one way: ``tests`` may import ``bench`` and ``examples``, ``bench`` may import
``examples``, ``examples`` imports neither, and ``traincost`` none of the three.
"""

from __future__ import annotations

import ast
import functools
import subprocess
from pathlib import Path

import networkx as nx

import traincost

ROOT = Path(traincost.__file__).parent
REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs/architecture.md"
# modules every layer uses (errors, file and progress helpers): left out of the picture, not of the checks
_UTILITIES = frozenset(
    {"errors", "io", "progress", "tables", "config_files", "signature", "workload_check", "bisection", "limits"}
)


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """A Python file's syntax tree, parsed once for every test of this module."""
    return ast.parse(path.read_text(), filename=str(path))


def _package_imports() -> nx.DiGraph:
    """Edges package -> package, each labelled with one module that makes it."""
    graph = nx.DiGraph()
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        package = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        for node in ast.walk(_parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if parts[0] == "traincost" and len(parts) > 1 and parts[1] != package:
                    graph.add_edge(package, parts[1], module=str(relative))
    return graph


def test_the_package_import_graph_has_no_cycle() -> None:
    graph = _package_imports()
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, [[(a, graph.edges[a, b]["module"]) for a, b in zip(c, c[1:] + c[:1], strict=True)] for c in cycles]


# the single-core engine's modules, each using only those before it (``traincost.cost.core``'s docstring)
_ENGINE_LAYERS = (
    "vocabulary",
    "gemm",
    "memory",
    "level_traffic",
    "tiles",
    "orders",
    "traffic",
    "inside",
    "candidates",
    "mac",
    "simd",
)


def test_the_engine_modules_import_only_those_below_them() -> None:
    folder = ROOT / "cost/core"
    assert sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__") == sorted(_ENGINE_LAYERS)
    upward = []
    for rank, module in enumerate(_ENGINE_LAYERS):
        tree = ast.parse((folder / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("traincost.cost.core."):
                imported = node.module.rsplit(".", 1)[1]
                if _ENGINE_LAYERS.index(imported) >= rank:
                    upward.append(f"{module} imports {imported}")
    assert not upward, upward


# the front end's subpackages (``traincost.frontend``'s docstring) and which of the others each may import: the torch
# and the ONNX front end what both use, never each other; what both use neither. The modules at the top of
# ``frontend/`` (its constants, ``agreement``) import none of them.
_FRONTEND_MAY_IMPORT = {"shared": frozenset(), "torch": frozenset({"shared"}), "onnx": frozenset({"shared"})}


def _frontend_subpackages(node: ast.AST) -> set[str]:
    """The subpackages of ``traincost.frontend`` an import statement names."""
    if isinstance(node, ast.ImportFrom) and node.module == "traincost.frontend":
        return {alias.name for alias in node.names} & set(_FRONTEND_MAY_IMPORT)
    if isinstance(node, ast.ImportFrom) and node.module:
        modules = [node.module]
    elif isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
    else:
        return set()
    parts = [module.split(".") for module in modules]
    return {p[2] for p in parts if p[:2] == ["traincost", "frontend"] and len(p) > 2 and p[2] in _FRONTEND_MAY_IMPORT}


def test_the_front_ends_import_what_they_share_and_never_each_other() -> None:
    folder = ROOT / "frontend"
    subpackages = sorted(path.parent.name for path in folder.glob("*/__init__.py"))
    assert subpackages == sorted(_FRONTEND_MAY_IMPORT)
    wrong = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder)
        owner = relative.parts[0] if len(relative.parts) > 1 else None
        allowed = _FRONTEND_MAY_IMPORT.get(owner, frozenset())
        for node in ast.walk(_parsed(path)):
            wrong += [f"{relative} imports frontend.{sub}" for sub in _frontend_subpackages(node) - allowed - {owner}]
    assert not wrong, wrong


def test_analysis_does_not_import_plots() -> None:
    graph = _package_imports()
    assert not graph.has_edge("analysis", "plots"), graph.edges["analysis", "plots"]["module"]


def imported_packages(tree: ast.Module) -> set[str]:
    """The top-level packages a Python file imports: every ``import`` and ``from ... import`` in it (inside functions
    too; not relative ones) and every ``importlib.import_module``/``__import__`` of a literal name."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return {name.split(".")[0] for name in found}


def _importing(folder: Path, packages: set[str]) -> dict[str, set[str]]:
    """The Python files under ``folder`` (hidden folders left out: a bench's venvs and kept runs) that import any of
    ``packages``, with which."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        if imported := imported_packages(_parsed(path)) & packages:
            found[str(path.relative_to(REPO))] = imported
    return found


def test_the_import_scan_finds_every_way_a_file_imports_a_package() -> None:
    importing = [
        "import tests",
        "import tests.third_party as zoo",
        "from tests import third_party",
        "from tests.third_party import NETWORKS",
        "def networks():\n    from tests.third_party import NETWORKS\n    return NETWORKS",
        "import importlib\nzoo = importlib.import_module('tests.third_party')",
        "zoo = __import__('tests.third_party')",
    ]
    for source in importing:
        assert "tests" in imported_packages(ast.parse(source)), source
    for source in ("from . import tests", "import testscenarios", "path = 'tests.third_party:NETWORKS'", "from a import tests"):
        assert "tests" not in imported_packages(ast.parse(source)), source


def test_the_bench_and_the_examples_never_import_the_tests() -> None:
    """The bench is a tool users run: what it needs lives in the package or in ``examples``, never in ``tests``."""
    assert _importing(REPO / "bench", {"tests"}) == {}
    assert _importing(REPO / "examples", {"tests", "bench"}) == {}
    assert _importing(ROOT, {"tests", "bench", "examples"}) == {}


def test_the_api_sits_above_every_package_but_the_command_line() -> None:
    """``api`` may use any package; only the command line, which is argument parsing and files over it, uses ``api``."""
    graph = _package_imports()
    assert graph.has_edge("cli", "api")
    users = {package: graph.edges[package, "api"]["module"] for package in graph.predecessors("api") if package != "cli"}
    assert not users, users


def mermaid() -> str:
    """The package import graph as a Mermaid flowchart: the ``cli*`` modules as one ``cli``, utilities left out."""
    graph = _package_imports()

    def drawn(package: str) -> str:
        return "cli" if package.startswith("cli") else package

    edges = {(drawn(a), drawn(b)) for a, b in graph.edges}
    edges = {(a, b) for a, b in edges if a != b and not {a, b} & _UTILITIES}
    return "\n".join(["```mermaid", "flowchart TD", *(f"    {a} --> {b}" for a, b in sorted(edges)), "```"])


def test_the_architecture_page_shows_the_import_graph_as_it_is() -> None:
    assert mermaid() in ARCHITECTURE.read_text(), "docs/architecture.md: paste `python tests/unit/test_layering.py`"


if __name__ == "__main__":
    print(mermaid())


def test_nothing_in_the_repository_points_outside_it() -> None:
    """A clone must carry what it needs: no tracked file names the shared folder beside the checkout."""
    repo = ARCHITECTURE.parents[1]
    listed = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout.split()
    outside = ("../" + "shared", "/work/" + "shared")  # split, so that this file does not name them
    texts = {name: (repo / name).read_text(errors="ignore") for name in listed if (repo / name).is_file()}
    found = [name for name, text in texts.items() if any(o in text for o in outside)]
    assert not found, found
