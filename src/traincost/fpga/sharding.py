"""The DP/TP baselines of MTrain section VI-C on the same clusters and op costs: Alpa's intra-operator
sharding ILP and HAP's joint search of sharding scheme and sharding ratio.

Every layer (its FP, BP and WU sub-operations together) runs on every accelerator at once, either
**DP** (its batch split by the sharding ratio, weights replicated) or **TP** (its output channels
split by the ratio, the batch whole); the accelerators meet after every layer, so a layer takes as
long as its slowest accelerator plus its collectives (MTrain Figure 3 (b)); each FPGA runs the design its IP
sizes for its share of samples, as an MTrain branch does (``share_design``). Collectives move
``(N - 1) / N`` of a tensor per accelerator over the P2P link (ring all-gather; all-reduce twice that):

* **DP** all-reduces the layer's weight gradients; a batch-wise layer (BN, the loss) first gathers
  its whole input to one place and scatters its output back (the statistics need the whole batch),
  in FP and again in BP. Every accelerator applies the whole update.
* **TP** of a conv / FC layer needs its whole input (all-gathered if it arrives split) and all-reduces
  its input gradient in BP; a channel-wise layer (BN, ReLU, pooling, add) keeps channel-split data
  split. Each accelerator updates its share of the weights.
* **Resharding** between a producer and a consumer that lay the activation out differently (split
  by batch, by channel, or whole) all-gathers it, in FP and its gradient again in BP.

**Alpa** (Zheng et al., OSDI 2022) targets homogeneous meshes: equal shares, and the strategy of
every layer from one ILP (Alpa's formulation: one-hot strategy per layer, linearised edge costs),
solved exactly with OR-Tools' SCIP. **HAP** (Zhang et al., 2024) searches the scheme and the ratio
jointly: from equal shares, alternate the ILP for the scheme and an LP (GLOP) for the ratio that
balances the layers' compute (``t_l >= share_i * seconds_l,i``), rounded to whole samples, until the
exactly evaluated step stops improving. HAP finds its scheme by A* program synthesis; the ILP gives
the optimum of the same problem.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.linear_solver import pywraplp

from traincost.errors import ConfigError
from traincost.fpga.ip_models import TrainingIp, share_design
from traincost.fpga.training_dag import TrainingDag

__all__ = ["ShardedStep", "alpa_sharding", "hap_sharding", "LayerGraph"]

STRATEGIES = ("DP", "TP")
_MAX_HAP_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class LayerGraph:
    """The step by forward layer: its DAG nodes, kind, weights and the activations between layers."""

    names: tuple[str, ...]
    nodes: tuple[tuple[int, ...], ...]  # FP, BP, WU nodes of each layer
    updates: tuple[tuple[int, ...], ...]  # UPD nodes of each layer
    reduces: np.ndarray  # bool: a conv / FC layer (reduces over input channels)
    batch_wise: np.ndarray  # bool: BN or the loss
    weight_bytes: np.ndarray
    edges: tuple[tuple[int, int, float], ...]  # (producer layer, consumer layer, bytes per sample)

    @classmethod
    def from_dag(cls, dag: TrainingDag) -> LayerGraph:
        names = tuple(dict.fromkeys(dag.layer))
        index = {name: i for i, name in enumerate(names)}
        nodes: list[list[int]] = [[] for _ in names]
        updates: list[list[int]] = [[] for _ in names]
        reduces = np.zeros(len(names), dtype=bool)
        batch_wise = np.zeros(len(names), dtype=bool)
        weight = np.zeros(len(names))
        for n, (layer, phase) in enumerate(zip(dag.layer, dag.phase, strict=True)):
            i = index[layer]
            (updates if phase == "UPD" else nodes)[i].append(n)
            weight[i] += dag.state_bytes[n] if phase == "FP" else 0.0
            if phase == "FP":
                reduces[i] = bool(dag.costs.macs[dag.ops[n]].sum() > 0)
                batch_wise[i] = not dag.splittable[n]
        edges = {}
        for src, dst, nbytes, per_sample in dag.edges:
            if per_sample and dag.phase[src] == "FP" and dag.phase[dst] == "FP":
                key = (index[dag.layer[src]], index[dag.layer[dst]])
                edges[key] = edges.get(key, 0.0) + nbytes
        return cls(
            names=names,
            nodes=tuple(tuple(n) for n in nodes),
            updates=tuple(tuple(u) for u in updates),
            reduces=reduces,
            batch_wise=batch_wise,
            weight_bytes=weight,
            edges=tuple((u, v, b) for (u, v), b in sorted(edges.items())),
        )

    def input_bytes(self) -> np.ndarray:
        """Per layer: activation bytes per sample it reads from other layers."""
        total = np.zeros(len(self.names))
        for _, v, nbytes in self.edges:
            total[v] += nbytes
        return total


@dataclass(frozen=True, slots=True)
class ShardedStep:
    """A DP/TP plan: strategy per layer, the sharding ratio, and its step latency."""

    strategy: tuple[str, ...]
    shares: tuple[int, ...]  # samples per accelerator (DP) and the same fractions of channels (TP)
    latency_s: float
    compute_s: float
    comm_s: float
    throughput_gflops: float
    rounds: int
    seconds: float  # search time
    max_dram_fraction: float  # the fullest accelerator's DRAM: weights, states and gradients (whole under DP,
    # its channel share under TP) and its samples' activations


class _Costs:
    """Per layer and strategy: compute seconds on each accelerator at given shares, and collective seconds."""

    def __init__(self, dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, bandwidth_gb_per_s: float) -> None:
        self.dag, self.accelerators, self.batch = dag, tuple(accelerators), batch
        self.layers = LayerGraph.from_dag(dag)
        n = len(accelerators)
        self.spread = (n - 1) / n  # the fraction of a tensor each accelerator receives in a ring collective
        self.bandwidth = bandwidth_gb_per_s * 1e9
        self._computed: dict[tuple[int, ...], np.ndarray] = {}
        self.collective_s = self._collectives()
        self.reshard_s = self._resharding()

    def compute(self, shares: Sequence[int]) -> np.ndarray:
        """(layers, strategies, accelerators) seconds at ``shares`` samples per accelerator."""
        key = tuple(shares)
        if key not in self._computed:
            self._computed[key] = self._compute(key)
        return self._computed[key]

    def _compute(self, shares: tuple[int, ...]) -> np.ndarray:
        layers, batch = self.layers, self.batch
        costs, ops = self.dag.costs, self.dag.ops
        out = np.zeros((len(layers.names), len(STRATEGIES), len(self.accelerators)))
        for i, whole in enumerate(self.accelerators):
            ip = share_design(whole, costs, shares[i])  # the FPGA's design for its share, as MTrain's
            fraction = shares[i] / batch
            at_share, at_batch = costs.seconds_per_part(ip, shares[i], ops), costs.seconds_per_part(ip, batch, ops)
            sharded = costs.shard(fraction).seconds_per_part(ip, batch, ops) if fraction > 0 else None  # per DAG node
            for layer, (nodes, updates) in enumerate(zip(layers.nodes, layers.updates, strict=True)):
                step = sum(at_share[k] for k in nodes)
                update = sum(at_batch[k] for k in updates)
                out[layer, 0, i] = step + update if shares[i] else 0.0
                if sharded is not None:
                    out[layer, 1, i] = sum(sharded[k] for k in (*nodes, *updates))
        return out

    def _collectives(self) -> np.ndarray:
        """(layers, strategies) seconds of each layer's own collectives."""
        layers, batch = self.layers, self.batch
        act = layers.input_bytes() * batch
        dp = 2 * self.spread * layers.weight_bytes + np.where(layers.batch_wise, 2 * 2 * self.spread * act, 0.0)
        tp = np.where(layers.reduces, 2 * self.spread * act, 0.0)
        return np.stack([dp, tp], axis=1) / self.bandwidth

    def _resharding(self) -> np.ndarray:
        """(edges, producer strategy, consumer strategy) seconds to re-lay an activation out, FP and BP."""
        layers = self.layers
        out = np.zeros((len(layers.edges), 2, 2))
        for e, (_, v, nbytes) in enumerate(layers.edges):
            for a in range(2):
                for b in range(2):
                    if _layout_out(a) != _layout_in(b, reduces=layers.reduces[v], batch_wise=layers.batch_wise[v]):
                        out[e, a, b] = 2 * self.spread * nbytes * self.batch / self.bandwidth
        return out

    def dram_fraction(self, strategy: Sequence[int], shares: Sequence[int]) -> float:
        """The fullest accelerator's DRAM use over its capacity."""
        dag, layers = self.dag, self.layers
        fixed = np.array(
            [
                sum(dag.state_bytes[k] + dag.out_bytes[k, 1] for k in (*n, *u))
                for n, u in zip(layers.nodes, layers.updates, strict=True)
            ]
        )
        per_sample = float(dag.out_bytes[:, 0].sum())
        tp = np.array([STRATEGIES[s] == "TP" for s in strategy])
        worst = 0.0
        for ip, share in zip(self.accelerators, shares, strict=True):
            if share:
                held = float(np.where(tp, fixed * share / self.batch, fixed).sum()) + per_sample * share
                worst = max(worst, held / ip.device.dram_bytes)
        return worst

    def latency(self, strategy: Sequence[int], shares: Sequence[int]) -> tuple[float, float]:
        """(compute, communication) seconds of the synchronous step."""
        compute = self.compute(shares)
        rows = np.arange(len(strategy))
        busy = float(compute[rows, strategy].max(axis=1).sum())
        comm = float(self.collective_s[rows, strategy].sum())
        comm += sum(float(self.reshard_s[e, strategy[u], strategy[v]]) for e, (u, v, _) in enumerate(self.layers.edges))
        return busy, comm


def _layout_out(strategy: int) -> str:
    return "batch" if STRATEGIES[strategy] == "DP" else "channel"


def _layout_in(strategy: int, *, reduces: bool, batch_wise: bool) -> str:
    if STRATEGIES[strategy] == "DP":
        return "whole" if batch_wise else "batch"
    return "whole" if reduces else "channel"


def _solve_strategies(costs: _Costs, shares: Sequence[int]) -> list[int]:
    """Alpa's ILP: the strategy per layer minimising compute + collectives + resharding (exact, SCIP)."""
    layer_s = costs.compute(shares).max(axis=2) + costs.collective_s
    reshard = costs.reshard_s
    solver = pywraplp.Solver.CreateSolver("SCIP")
    pick = [[solver.BoolVar(f"s{layer}_{s}") for s in range(2)] for layer in range(len(layer_s))]
    for choice in pick:
        solver.Add(choice[0] + choice[1] == 1)
    objective = [float(layer_s[layer, s]) * pick[layer][s] for layer in range(len(layer_s)) for s in range(2)]
    for e, (u, v, _) in enumerate(costs.layers.edges):
        # one-hot over the four (producer, consumer) strategy pairs, tied to both layers' choices
        pair = [[solver.NumVar(0.0, 1.0, f"e{e}_{a}{b}") for b in range(2)] for a in range(2)]
        for a in range(2):
            solver.Add(pair[a][0] + pair[a][1] == pick[u][a])
        for b in range(2):
            solver.Add(pair[0][b] + pair[1][b] == pick[v][b])
        objective += [float(reshard[e, a, b]) * pair[a][b] for a in range(2) for b in range(2) if reshard[e, a, b] > 0]
    solver.Minimize(solver.Sum(objective))
    solver.SetTimeLimit(60_000)
    if solver.Solve() not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        raise ConfigError("DP/TP sharding ILP: SCIP found no solution")
    return [int(round(choice[1].solution_value())) for choice in pick]


def _balance_shares(costs: _Costs, strategy: Sequence[int]) -> tuple[int, ...]:
    """HAP's ratio LP: the fractions that minimise the summed per-layer maximum of compute, with each
    layer's time on an accelerator linear in its share; rounded to whole samples."""
    full = costs.compute([costs.batch] * len(costs.accelerators))
    rows = np.arange(len(strategy))
    per_layer = full[rows, strategy]  # (layers, accelerators) seconds with the whole layer
    solver = pywraplp.Solver.CreateSolver("GLOP")
    share = [solver.NumVar(0.0, 1.0, f"x{i}") for i in range(per_layer.shape[1])]
    slack = [solver.NumVar(0.0, solver.infinity(), f"t{layer}") for layer in range(per_layer.shape[0])]
    solver.Add(sum(share) == 1.0)
    for layer, row in enumerate(per_layer):
        for i, seconds in enumerate(row):
            solver.Add(slack[layer] >= float(seconds) * share[i])
    solver.Minimize(sum(slack))
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        raise ConfigError("HAP sharding-ratio LP: GLOP found no optimum")
    return _whole_samples(np.array([x.solution_value() for x in share]), costs.batch)


def _whole_samples(fractions: np.ndarray, batch: int) -> tuple[int, ...]:
    exact = batch * np.maximum(fractions, 0.0) / max(float(np.sum(fractions)), 1e-30)
    shares = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - shares), kind="stable")[: batch - int(shares.sum())]:
        shares[i] += 1
    return tuple(int(s) for s in shares)


def _result(costs: _Costs, strategy: Sequence[int], shares: tuple[int, ...], rounds: int, began: float) -> ShardedStep:
    compute, comm = costs.latency(strategy, shares)
    latency = compute + comm
    return ShardedStep(
        strategy=tuple(STRATEGIES[s] for s in strategy),
        shares=shares,
        latency_s=latency,
        compute_s=compute,
        comm_s=comm,
        throughput_gflops=costs.dag.flops(costs.batch) / latency / 1e9,
        rounds=rounds,
        seconds=time.perf_counter() - began,
        max_dram_fraction=costs.dram_fraction(strategy, shares),
    )


def alpa_sharding(dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, *, bandwidth_gb_per_s: float) -> ShardedStep:
    """Alpa's intra-operator pass on the cluster: equal shares, the ILP's strategy per layer."""
    began = time.perf_counter()
    costs = _Costs(dag, accelerators, batch, bandwidth_gb_per_s)
    shares = _whole_samples(np.ones(len(accelerators)), batch)
    return _result(costs, _solve_strategies(costs, shares), shares, 1, began)


def hap_sharding(dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, *, bandwidth_gb_per_s: float) -> ShardedStep:
    """HAP's joint search: alternate the scheme ILP and the ratio LP from equal shares until the step stops shortening."""
    began = time.perf_counter()
    costs = _Costs(dag, accelerators, batch, bandwidth_gb_per_s)
    shares = _whole_samples(np.ones(len(accelerators)), batch)
    best = _result(costs, _solve_strategies(costs, shares), shares, 1, began)
    for rounds in range(2, _MAX_HAP_ROUNDS + 1):
        strategy = [STRATEGIES.index(s) for s in best.strategy]
        shares = _balance_shares(costs, strategy)
        trial = _result(costs, _solve_strategies(costs, shares), shares, rounds, began)
        if trial.latency_s >= best.latency_s * (1 - 1e-9):
            break
        best = trial
    return best
