"""The packages of ``traincost`` import one another without cycles, and analysis never draws.

A cycle between packages (``cost`` importing the scheduler that imports ``cost``) makes every change
on either side touch both; ``analysis`` computes the checks the plots and the report show, so it
must not depend on ``plots`` (matplotlib, seaborn) to do so.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import traincost

ROOT = Path(traincost.__file__).parent


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


def test_analysis_does_not_import_plots() -> None:
    graph = _package_imports()
    assert not graph.has_edge("analysis", "plots"), graph.edges["analysis", "plots"]["module"]
