"""Layer-fusion solver of MONET section V-A: candidate subgraphs by bounded search, exact cover by CP-SAT.

1. **Candidates.** From every node of the op graph (edges = tensors from producer to reader), a
   breadth of subgraphs is grown along its outgoing edges: every subgraph of at most ``max_length``
   nodes whose nodes are all reachable from that root inside the subgraph is enumerated once (the
   ESU scheme, on successor edges), backtracking as soon as a constraint that only gets worse with
   more nodes fails, or when the nodes still needed to leave a single exit exceed the length limit:

   * memory: per core, what the nodes hold while the subgraph runs as a stack of tiles (their weights,
     their double-buffered output tiles, a convolution's input halo) fits in the core's resident share
     of its local memory (capacity × instances × ``resident_fraction``) at some cut of the subgraph
     into sample and row tiles (adding a node never frees memory): :mod:`traincost.schedule.fusion_memory`,
     the model by which the scheduler fuses a group of a plan;
   * tiling: the nodes' intra-core tiling factors (output rows) divide one another pairwise;
   * operator types (optional): at most 3 convolutions (forward or gradient) and 2 GEMMs.

   A subgraph is kept if at most one of its nodes has edges leaving it (a fused stack produces one
   tensor for the rest of the graph). Single nodes are always candidates, so a cover exists.
2. **Selection.** OR-Tools CP-SAT chooses ``x_g ∈ {0,1}`` so that every node is covered exactly once,
   minimising the number of subgraphs (the paper's objective) or the bytes that cross subgraph
   boundaries (its alternative).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from ortools.sat.python import cp_model

from traincost.cost.optable import OpTable
from traincost.errors import ConfigError
from traincost.hardware.spec import HardwareSpec
from traincost.schedule.fusion_memory import OpMemory, core_capacity_bytes, deciding_cuts, held_bytes
from traincost.schedule.plan import DEFAULT_RESIDENT_FRACTION
from traincost.schedule.scheduler import place_ops

__all__ = [
    "FusionProblem",
    "FusionResult",
    "FusionParts",
    "candidate_subgraphs",
    "independent_parts",
    "solve_fusion",
    "fusion_report",
    "boundary_bytes",
    "Objective",
]

Objective = Literal["subgraphs", "boundary_bytes"]
_CONVS = ("conv", "conv_dgrad", "conv_wgrad")
_GEMMS = ("gemm", "matmul")


@dataclass(frozen=True, slots=True)
class FusionProblem:
    """The op graph and per-node facts the constraints need (from an OpTable and one configuration)."""

    n_nodes: int
    successors: tuple[frozenset[int], ...]
    leaves_graph: np.ndarray  # bool: the node writes a tensor that must leave the chip (a step output)
    fixed_bytes: np.ndarray  # what the node keeps on its core while fused whatever the tiling (``OpMemory.fixed``)
    tiled_bytes: np.ndarray  # what it keeps divided by the tiles (``OpMemory.tiled``)
    halo_bytes: np.ndarray  # its input halo where rows are tiled, all its samples (``OpMemory.halo_row_bytes`` × batch)
    batch: np.ndarray  # samples it may be cut along
    core: np.ndarray  # core index per node
    capacity_bytes: np.ndarray  # per core
    tiling: np.ndarray  # intra-core tiling factor (output rows) per node
    kind: np.ndarray
    tensor_bytes_out: np.ndarray  # bytes each node writes (for the boundary objective)
    tensor_bytes_in: np.ndarray  # bytes each node reads from other nodes
    cuts: str = "stream"  # how a subgraph is cut into tiles (``fusion_memory.FUSION_TILINGS``)

    @classmethod
    def build(
        cls,
        table: OpTable,
        hardware: HardwareSpec,
        *,
        config: int = 0,
        resident_fraction: float = DEFAULT_RESIDENT_FRACTION,
        tiling: str = "stream",
    ) -> FusionProblem:
        """The fusion problem of ``table`` on configuration ``config`` of ``hardware``, a group admitted when it fits
        in ``resident_fraction`` of each core's top memory (the scheduler's resident share)."""
        word = hardware.word_bytes
        producer, elems = table.producers().tolist(), table.tensor_elems.tolist()
        successors: list[set[int]] = [set() for _ in range(len(table))]
        bytes_in = [0.0] * len(table)
        for j, ins in enumerate(table.inputs):
            for t in ins:
                p = producer[t]
                if p >= 0 and p != j:
                    successors[p].add(j)
                    bytes_in[j] += elems[t] * word
        core = place_ops(table, hardware)
        out_bytes = table.sum_over_outputs(table.tensor_elems) * word
        leaves = table.sum_over_outputs(table.tensor_step_output) > 0
        memory = OpMemory.of(table, hardware, tiling=tiling)
        return cls(
            n_nodes=len(table),
            successors=tuple(frozenset(s) for s in successors),
            leaves_graph=leaves,
            fixed_bytes=memory.fixed,
            tiled_bytes=memory.tiled,
            halo_bytes=memory.halo_row_bytes * memory.batch,
            batch=memory.batch,
            core=core,
            capacity_bytes=core_capacity_bytes(hardware, resident_fraction=resident_fraction)[config],
            tiling=memory.rows,
            cuts=tiling,
            kind=table.kind,
            tensor_bytes_out=out_bytes,
            tensor_bytes_in=np.array(bytes_in),
        )

    def restricted(self, nodes: Sequence[int]) -> FusionProblem:
        """The problem of ``nodes`` alone, renumbered 0..k-1 in their order, plus node k standing for every node
        outside them: a member with a successor outside has k as successor, so it is an exit. A candidate made of
        ``nodes`` is valid here exactly when it is valid in the whole problem."""
        local = {n: i for i, n in enumerate(nodes)}
        outside = len(nodes)
        successors = [frozenset(local.get(s, outside) for s in self.successors[n]) for n in nodes]
        rows = list(nodes)

        def take(values: np.ndarray, filler: object) -> np.ndarray:
            return np.append(values[rows], np.array([filler], dtype=values.dtype))

        return FusionProblem(
            n_nodes=outside + 1,
            successors=(*successors, frozenset()),
            leaves_graph=take(self.leaves_graph, False),
            fixed_bytes=take(self.fixed_bytes, 0.0),
            tiled_bytes=take(self.tiled_bytes, 0.0),
            halo_bytes=take(self.halo_bytes, 0.0),
            batch=take(self.batch, 1),
            core=take(self.core, 0),
            capacity_bytes=self.capacity_bytes,
            tiling=take(self.tiling, 1),
            cuts=self.cuts,
            kind=take(self.kind, ""),
            tensor_bytes_out=take(self.tensor_bytes_out, 0.0),
            tensor_bytes_in=take(self.tensor_bytes_in, 0.0),
        )

    def key(self) -> tuple:
        """Everything a solve depends on, as a hashable value: equal keys, equal candidates and cover."""
        arrays = (
            self.leaves_graph,
            self.fixed_bytes,
            self.tiled_bytes,
            self.halo_bytes,
            self.batch,
            self.core,
            self.capacity_bytes,
            self.tiling,
            self.kind,
        )
        return (
            self.n_nodes,
            tuple(tuple(sorted(s)) for s in self.successors),
            *(tuple(a.tolist()) for a in arrays),
            tuple(self.tensor_bytes_out.tolist()),
            tuple(self.tensor_bytes_in.tolist()),
            self.cuts,
        )


@dataclass(frozen=True, slots=True)
class FusionResult:
    """Chosen subgraphs (positions in the OpTable) and how the solve went."""

    subgraphs: tuple[tuple[int, ...], ...]
    candidates: int
    status: str
    objective: float
    best_bound: float
    enumerate_seconds: float
    solve_seconds: float

    @property
    def gap(self) -> float:
        return 0.0 if self.objective == 0 else abs(self.objective - self.best_bound) / abs(self.objective)


def candidate_subgraphs(
    problem: FusionProblem, *, max_length: int, type_limits: bool = True, nodes: Sequence[int] | None = None
) -> list[tuple[int, ...]]:
    """Every valid subgraph of at most ``max_length`` nodes grown from one root along its outgoing edges,
    each once (sorted node tuples); with ``nodes``, only subgraphs made of those nodes."""
    if max_length < 1:
        raise ConfigError(f"max_length: {max_length} must be at least 1")
    allowed = np.ones(problem.n_nodes, dtype=bool) if nodes is None else np.isin(np.arange(problem.n_nodes), nodes)
    search = _Search(problem, max_length=max_length, type_limits=type_limits, allowed=allowed)
    for root in np.flatnonzero(allowed).tolist():
        search.grow([root], search.inside(root), search.usage([root]))
    return search.found


@dataclass(frozen=True, slots=True)
class _Usage:
    """What a growing subgraph uses: its convolutions and GEMMs, the loops it may be cut along (its nodes' smallest
    tiling factor, the samples they all share) and per core the fixed, tiled and halo bytes of its nodes there."""

    convs: int
    gemms: int
    rows: int
    batch: int
    fixed: dict[int, float]
    tiled: dict[int, float]
    halo: dict[int, float]

    def with_node(self, node: int, search: _Search) -> _Usage:
        """This usage with ``node`` added."""
        core = search.core[node]
        return _Usage(
            convs=self.convs + search.conv[node],
            gemms=self.gemms + search.gemm[node],
            rows=min(self.rows, search.tiling[node]),
            batch=math.gcd(self.batch, search.batch[node]),
            fixed={**self.fixed, core: self.fixed.get(core, 0.0) + search.fixed[node]},
            tiled={**self.tiled, core: self.tiled.get(core, 0.0) + search.tiled[node]},
            halo={**self.halo, core: self.halo.get(core, 0.0) + search.halo[node]},
        )

    def fits(self, capacity: Sequence[float], tiling: str) -> bool:
        """Whether, at one of the cuts of ``tiling`` that decide it, every core holds no more than its capacity."""
        return any(
            all(held_bytes(f, self.tiled[core], self.halo[core], cut) <= capacity[core] for core, f in self.fixed.items())
            for cut in deciding_cuts(self.batch, self.rows, tiling)
        )


class _Search:
    """The candidate enumeration, on plain Python lists (it runs millions of small steps)."""

    def __init__(self, problem: FusionProblem, *, max_length: int, type_limits: bool, allowed: np.ndarray) -> None:
        self.max_length = max_length
        self.allowed = allowed.tolist()
        self.successors = problem.successors
        self.leaves = problem.leaves_graph.tolist()
        self.tiling = problem.tiling.tolist()
        self.core = problem.core.tolist()
        self.fixed = problem.fixed_bytes.tolist()
        self.tiled = problem.tiled_bytes.tolist()
        self.halo = problem.halo_bytes.tolist()
        self.batch = problem.batch.tolist()
        self.capacity = problem.capacity_bytes.tolist()
        self.cuts = problem.cuts
        limited = type_limits
        self.conv = [limited and k in _CONVS for k in problem.kind]
        self.gemm = [limited and k in _GEMMS for k in problem.kind]
        self.impossible = problem.n_nodes + 1
        self.found: list[tuple[int, ...]] = []
        self._inside: dict[int, set[int]] = {}

    def inside(self, node: int) -> set[int]:
        """The allowed successors of ``node`` (made once per node; the same set, so iterated in the same order)."""
        found = self._inside.get(node)
        if found is None:
            found = self._inside[node] = {n for n in self.successors[node] if self.allowed[n]}
        return found

    def usage(self, members: Sequence[int]) -> _Usage:
        usage = _Usage(convs=0, gemms=0, rows=self.tiling[members[0]], batch=self.batch[members[0]], fixed={}, tiled={}, halo={})
        for m in members:
            usage = usage.with_node(m, self)
        return usage

    def grow(self, members: list[int], extension: set[int], usage: _Usage) -> None:
        missing = self.nodes_to_single_exit(members)
        if missing == 0:
            self.found.append(tuple(sorted(members)))
        if len(members) + max(missing, 1) > self.max_length:
            return  # no larger subgraph grown from this one can be valid within the length limit
        extension = set(extension)
        if not extension:
            return
        member_set = set(members)
        near = set().union(*(self.successors[m] for m in members))
        while extension:
            node = extension.pop()
            grown_usage = self.admit(members, node, usage)
            if grown_usage is None:
                continue
            exclusive = {n for n in self.inside(node) if n not in member_set and n not in near}
            self.grow([*members, node], extension | exclusive, grown_usage)

    def admit(self, members: Sequence[int], node: int, usage: _Usage) -> _Usage | None:
        """The usage with ``node`` added, or None when a constraint that only gets worse fails
        (tiling factors dividing one another, at most 3 convolutions and 2 GEMMs, memory per core)."""
        if usage.convs + self.conv[node] > 3 or usage.gemms + self.gemm[node] > 2:
            return None
        tile, tiling = self.tiling[node], self.tiling
        for m in members:
            if tile % tiling[m] and tiling[m] % tile:
                return None
        grown = usage.with_node(node, self)
        return grown if grown.fits(self.capacity, self.cuts) else None

    def nodes_to_single_exit(self, members: Sequence[int]) -> int:
        """A lower bound on the nodes to add before at most one member has edges leaving (0: already so).

        Every exit but one must have all its outside successors added; a node writing a step output
        stays an exit whatever is added, so two of them can never be fixed.
        """
        if len(members) == 1:
            return 0  # one member is at most one exit
        inside = set(members)
        outside = {m: self.successors[m] - inside for m in members}
        exits = [m for m in members if outside[m] or self.leaves[m]]
        if len(exits) <= 1:
            return 0
        pinned = [m for m in exits if self.leaves[m]]
        if len(pinned) > 1:
            return self.impossible
        keep_options = pinned or exits
        return min(len(set().union(*(outside[m] for m in exits if m != keep))) for keep in keep_options)


def independent_parts(problem: FusionProblem, nodes: Sequence[int]) -> list[list[int]]:
    """``nodes`` split into the parts no candidate spans: a candidate is connected by edges between its members,
    so each lies within one part of the graph that edges between two of ``nodes`` connect. Parts in node order."""
    chosen = set(nodes)
    part = {n: n for n in nodes}

    def root(n: int) -> int:
        while part[n] != n:
            part[n] = part[part[n]]
            n = part[n]
        return n

    for n in nodes:
        for s in problem.successors[n]:
            if s in chosen:
                part[root(s)] = root(n)
    parts: dict[int, list[int]] = {}
    for n in sorted(chosen):
        parts.setdefault(root(n), []).append(n)
    return list(parts.values())


class FusionParts:
    """Covers of a problem's independent parts (``independent_parts``), each solved alone with CP-SAT and
    remembered by the part's restricted problem (``FusionProblem.restricted``): a part met again, in this graph
    or in another with the same ops around it, is not enumerated or solved again. The fewest subgraphs adds up
    over parts, so optimal covers of the parts make an optimal cover of the nodes; among equally good covers,
    the one chosen depends only on the part."""

    def __init__(self, *, max_length: int, time_limit_s: float = 30.0) -> None:
        self.max_length = max_length
        self.time_limit_s = time_limit_s
        self._covers: dict[tuple, tuple[tuple[int, ...], ...]] = {}

    def solve(self, problem: FusionProblem, nodes: Sequence[int]) -> list[tuple[int, ...]]:
        """An optimal cover of ``nodes`` (fewest subgraphs), in positions of ``problem``."""
        subgraphs = []
        for part in independent_parts(problem, nodes):
            local = problem.restricted(part)
            key = local.key()
            cover = self._covers.get(key)
            if cover is None:
                result = solve_fusion(
                    local, max_length=self.max_length, time_limit_s=self.time_limit_s, workers=1, nodes=range(len(part))
                )
                cover = self._covers[key] = result.subgraphs
            subgraphs += [tuple(part[i] for i in group) for group in cover]
        return subgraphs


def boundary_bytes(problem: FusionProblem, members: Sequence[int]) -> float:
    """Bytes a subgraph reads from and writes to other subgraphs (tensors between its members excluded)."""
    inside = set(members)
    written = sum(problem.tensor_bytes_out[m] for m in members if problem.successors[m] - inside or problem.leaves_graph[m])
    internal_in = 0.0
    read = sum(problem.tensor_bytes_in[m] for m in members)
    for m in members:
        for s in problem.successors[m] & inside:
            internal_in += problem.tensor_bytes_out[m] if s != m else 0.0
    return float(written + max(0.0, read - internal_in))


def solve_fusion(
    problem: FusionProblem,
    *,
    max_length: int,
    type_limits: bool = True,
    objective: Objective = "subgraphs",
    time_limit_s: float = 60.0,
    workers: int = 2,
    seed: int = 0,
    nodes: Sequence[int] | None = None,
) -> FusionResult:
    """Pick an exact cover of the graph (or of ``nodes`` only, the rest being fused elsewhere) by candidate
    subgraphs with CP-SAT.

    Raises:
        ConfigError: on an unknown objective, or when no cover is found within the time limit.
    """
    began = time.perf_counter()
    candidates = candidate_subgraphs(problem, max_length=max_length, type_limits=type_limits, nodes=nodes)
    enumerated = time.perf_counter() - began
    match objective:
        case "subgraphs":
            weights = [1] * len(candidates)
        case "boundary_bytes":
            weights = [round(boundary_bytes(problem, g)) for g in candidates]
        case _:
            raise ConfigError(f"objective {objective!r}: expected 'subgraphs' or 'boundary_bytes'")
    model = cp_model.CpModel()
    chosen = [model.new_bool_var(f"x{g}") for g in range(len(candidates))]
    covering: list[list[int]] = [[] for _ in range(problem.n_nodes)]
    for g, members in enumerate(candidates):
        for m in members:
            covering[m].append(g)
    for node in range(problem.n_nodes) if nodes is None else nodes:
        model.add_exactly_one(chosen[g] for g in covering[node])
    model.minimize(sum(w * x for w, x in zip(weights, chosen, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    began = time.perf_counter()
    status = solver.solve(model)
    solved = time.perf_counter() - began
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise ConfigError(f"fusion: CP-SAT found no cover in {time_limit_s} s (status {solver.status_name(status)})")
    picked = tuple(candidates[g] for g in range(len(candidates)) if solver.boolean_value(chosen[g]))
    return FusionResult(
        subgraphs=picked,
        candidates=len(candidates),
        status=solver.status_name(status),
        objective=float(solver.objective_value),
        best_bound=float(solver.best_objective_bound),
        enumerate_seconds=enumerated,
        solve_seconds=solved,
    )


def fusion_report(result: FusionResult, *, max_length: int, type_limits: bool, objective: str, nodes: int) -> dict[str, object]:
    """One row describing a solve, for a Parquet table."""
    return {
        "max_length": max_length,
        "type_limits": type_limits,
        "objective": objective,
        "nodes": nodes,
        "candidates": result.candidates,
        "subgraphs": len(result.subgraphs),
        "fused_nodes": sum(len(g) for g in result.subgraphs if len(g) > 1),
        "status": result.status,
        "objective_value": result.objective,
        "best_bound": result.best_bound,
        "gap": result.gap,
        "enumerate_seconds": result.enumerate_seconds,
        "solve_seconds": result.solve_seconds,
    }
