"""The packages of ``traincost`` import one another without cycles, analysis never draws, and only the command line
uses the API.

A cycle between packages (``cost`` importing the scheduler that imports ``cost``) makes every change
on either side touch both; ``analysis`` computes the checks the plots and the report show, so it
must not depend on ``plots`` (matplotlib, seaborn) to do so. The picture of that graph in
``docs/architecture.md`` is generated from it (``python tests/unit/test_layering.py`` prints it).
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import networkx as nx

import traincost

ROOT = Path(traincost.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs/architecture.md"
# modules every layer uses (errors, file and progress helpers): left out of the picture, not of the checks
_UTILITIES = frozenset(
    {"errors", "io", "progress", "tables", "config_files", "signature", "workload_check", "bisection", "limits"}
)


def _package_imports() -> nx.DiGraph:
    """Edges package -> package, each labelled with one module that makes it."""
    graph = nx.DiGraph()
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        package = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
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


def test_analysis_does_not_import_plots() -> None:
    graph = _package_imports()
    assert not graph.has_edge("analysis", "plots"), graph.edges["analysis", "plots"]["module"]


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
