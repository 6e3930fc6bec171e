"""The layer-fusion solver on hand-built graphs whose optimum is known, and on a real training graph."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from traincost.cost import op_table
from traincost.errors import ConfigError
from traincost.hardware import load_hardware
from traincost.optimize import fusion
from traincost.optimize.fusion import FusionParts, FusionProblem, candidate_subgraphs, independent_parts, solve_fusion

EDGE_TPU = Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml"


def problem(
    edges: list[tuple[int, int]],
    n: int,
    *,
    kinds: list[str] | None = None,
    tiling: list[int] | None = None,
    memory: list[float] | None = None,
    outputs: list[float] | None = None,
    capacity: float = 1e9,
    leaves: tuple[int, ...] = (),
) -> FusionProblem:
    successors = [set() for _ in range(n)]
    for a, b in edges:
        successors[a].add(b)
    return FusionProblem(
        n_nodes=n,
        successors=tuple(frozenset(s) for s in successors),
        leaves_graph=np.isin(np.arange(n), leaves),
        fixed_bytes=np.array(memory or [1.0] * n),
        tiled_bytes=np.array(outputs or [0.0] * n),
        halo_bytes=np.zeros(n),
        batch=np.ones(n, dtype=np.int64),
        core=np.zeros(n, dtype=np.int64),
        capacity_bytes=np.array([capacity]),
        tiling=np.array(tiling or [1] * n),
        kind=np.array(kinds or ["eltwise"] * n, dtype=object),
        tensor_bytes_out=np.ones(n),
        tensor_bytes_in=np.ones(n),
    )


CHAIN = [(i, i + 1) for i in range(5)]  # 0 -> 1 -> ... -> 5


def test_a_chain_is_cut_into_the_fewest_pieces() -> None:
    for length, best in ((1, 6), (2, 3), (4, 2), (6, 1)):
        result = solve_fusion(problem(CHAIN, 6), max_length=length)
        assert result.status == "OPTIMAL" and len(result.subgraphs) == best
        assert sorted(itertools.chain(*result.subgraphs)) == list(range(6))  # exact cover


def test_constraints_that_split_a_chain() -> None:
    # tiling 2 and 3 do not divide each other: nodes 2 and 3 can never share a subgraph
    split = solve_fusion(problem(CHAIN, 6, tiling=[1, 2, 2, 3, 3, 1]), max_length=6)
    assert len(split.subgraphs) == 2 and not any({2, 3} <= set(g) for g in split.subgraphs)
    # four convolutions: at most three per subgraph unless the type limit is off
    convs = ["conv"] * 4 + ["eltwise"] * 2
    assert len(solve_fusion(problem(CHAIN, 6, kinds=convs), max_length=6).subgraphs) == 2
    assert len(solve_fusion(problem(CHAIN, 6, kinds=convs), max_length=6, type_limits=False).subgraphs) == 1
    # memory: three nodes of 1 byte fit in 3 bytes
    assert len(solve_fusion(problem(CHAIN, 6, capacity=3), max_length=6).subgraphs) == 2


def test_a_subgraph_keeps_one_tile_of_its_smallest_tiling_factor() -> None:
    # no weights, 8-byte outputs in 4 or 2 rows: a subgraph keeps each output / its smallest tiling factor
    chain = problem(CHAIN[:3], 4, memory=[0.0] * 4, outputs=[8.0] * 4, tiling=[4, 4, 4, 2], capacity=6)
    candidates = set(candidate_subgraphs(chain, max_length=4))
    assert (0, 1, 2) in candidates  # 3 x 8 / 4 = 6 bytes
    assert (1, 2, 3) not in candidates  # 3 x 8 / 2 = 12 bytes: node 3's 2 rows make every member's tile larger
    assert (2, 3) not in candidates and (0, 1, 2, 3) not in candidates  # 2 x 8 / 2 = 8, 4 x 8 / 2 = 16


def test_single_exit_rule() -> None:
    # 0 feeds 1 and 2; 1 and 2 feed 3. {0, 1} would have two exits (0 -> 2, 1 -> 3): not a candidate.
    diamond = problem([(0, 1), (0, 2), (1, 3), (2, 3)], 4)
    candidates = set(candidate_subgraphs(diamond, max_length=4))
    assert (0, 1) not in candidates and (0, 1, 2, 3) in candidates
    assert len(solve_fusion(diamond, max_length=4).subgraphs) == 1
    # a node that writes a step output counts as an exit: with 0 and 3 both writing one, the diamond has two
    both = problem([(0, 1), (0, 2), (1, 3), (2, 3)], 4, leaves=(0, 3))
    assert (0, 1, 2, 3) not in set(candidate_subgraphs(both, max_length=4))


def _reach(p: FusionProblem, root: int, group: set[int]) -> set[int]:
    seen, todo = {root}, [root]
    while todo:
        for n in p.successors[todo.pop()] & group - seen:
            seen.add(n)
            todo.append(n)
    return seen


def _brute_force(p: FusionProblem, max_length: int) -> int:
    """The fewest subgraphs of an exact cover by the candidates, trying every partition."""
    valid = set(candidate_subgraphs(p, max_length=max_length))
    best = p.n_nodes

    def cover(left: frozenset[int], used: int) -> None:
        nonlocal best
        if not left:
            best = min(best, used)
            return
        first = min(left)
        for group in valid:
            if first in group and set(group) <= left:
                cover(left - set(group), used + 1)

    cover(frozenset(range(p.n_nodes)), 0)
    return best


def test_candidates_are_unique_rooted_and_the_cover_optimal() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        edges = sorted({(int(a), int(b)) for a, b in rng.integers(0, 8, size=(10, 2)) if a < b})
        p = problem(edges, 8, tiling=list(rng.choice([1, 2, 4, 3], size=8)))
        candidates = candidate_subgraphs(p, max_length=4)
        assert len(candidates) == len(set(candidates))
        for group in candidates:  # one member reaches all the others along edges inside the group
            assert any(_reach(p, root, set(group)) == set(group) for root in group)
        assert len(solve_fusion(p, max_length=4).subgraphs) == _brute_force(p, 4)


def test_a_part_alone_has_the_candidates_it_has_in_the_whole_graph() -> None:
    # 0 -> 1 -> 2 -> 3 and 0 -> 4 -> 3, 5 -> 6: of nodes {0, 1, 2, 5, 6}, {0, 1, 2} and {5, 6} are apart
    p = problem([(0, 1), (1, 2), (2, 3), (0, 4), (4, 3), (5, 6)], 7)
    assert independent_parts(p, [6, 0, 2, 1, 5]) == [[0, 1, 2], [5, 6]]
    assert independent_parts(p, [0, 2]) == [[0], [2]]  # 1 links them, but it is not among the nodes
    part = [0, 1, 2]
    local = p.restricted(part)
    assert local.n_nodes == 4 and local.successors == (frozenset({1, 3}), frozenset({2}), frozenset({3}), frozenset())
    alone = {tuple(part[i] for i in g) for g in candidate_subgraphs(local, max_length=4, nodes=range(3))}
    assert alone == set(candidate_subgraphs(p, max_length=4, nodes=part))
    assert (0, 1) not in alone and (1, 2) in alone  # 0 also feeds 4 outside: two exits with 1


def test_parts_solved_apart_cover_as_well_as_one_solve(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    for _ in range(5):
        edges = sorted({(int(a), int(b)) for a, b in rng.integers(0, 12, size=(12, 2)) if a < b})
        p = problem(edges, 12, tiling=list(rng.choice([1, 2, 4, 3], size=12)))
        nodes = sorted(rng.choice(12, size=9, replace=False).tolist())
        cover = FusionParts(max_length=4).solve(p, nodes)
        assert sorted(m for g in cover for m in g) == nodes  # exact
        valid = set(candidate_subgraphs(p, max_length=4, nodes=nodes))
        assert all(g in valid for g in cover)
        assert len(cover) == len(solve_fusion(p, max_length=4, nodes=nodes).subgraphs)  # as few subgraphs
    # two equal chains apart (same ops, same readers outside): solved once; a reader outside makes another part
    solves = []
    monkeypatch.setattr(fusion, "solve_fusion", lambda *a, **k: solves.append(1) or solve_fusion(*a, **k))
    twins = problem([(0, 1), (1, 2), (3, 4), (4, 5), (4, 6), (5, 6)], 7)
    parts = FusionParts(max_length=4)
    assert parts.solve(twins, [0, 1, 3, 4]) == [(0, 1), (3, 4)]
    assert len(solves) == 1
    assert parts.solve(twins, [1, 2, 4, 5]) == [(1, 2), (4,), (5,)]  # 4 and 5 both feed 6: two exits
    assert len(solves) == 3


def test_resnet18_training_graph_is_covered(chain) -> None:
    # length 8 (about 25 s) is timed in bench/fusion_speed.py
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    result = solve_fusion(FusionProblem.build(table, load_hardware(EDGE_TPU)), max_length=6, time_limit_s=60)
    assert result.status in ("OPTIMAL", "FEASIBLE")
    assert sorted(itertools.chain(*result.subgraphs)) == list(range(len(table)))
    assert len(result.subgraphs) < len(table)
    assert result.enumerate_seconds + result.solve_seconds < 60


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="max_length"):
        candidate_subgraphs(problem(CHAIN, 6), max_length=0)
    with pytest.raises(ConfigError, match="objective"):
        solve_fusion(problem(CHAIN, 6), max_length=2, objective="fastest")
