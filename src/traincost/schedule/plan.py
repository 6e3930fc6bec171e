"""How a workload is deployed on an HDA: parallelism switches and fused subgraphs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from traincost.config_files import read_json
from traincost.cost.core import check_objective
from traincost.errors import ConfigError
from traincost.schedule.fusion_memory import FUSION_TILINGS

__all__ = ["ALLOCATIONS", "DEFAULT_RESIDENT_FRACTION", "SchedulePlan", "read_fused_groups", "resident_default", "MODES"]

MODES = ("layer_by_layer", "pipeline", "tensor", "pipeline_tensor", "stream_layer_by_layer")
ALLOCATIONS = ("split", "per_op")
# the share of a core's top memory that keeps tensors between ops (and holds fused groups) unless a run says otherwise
DEFAULT_RESIDENT_FRACTION = 0.5


@dataclass(frozen=True, slots=True)
class SchedulePlan:
    """Deployment choices of the Stream-style scheduler.

    Attributes:
        pipeline: cores work concurrently, each op on a core of the kind that runs it (convs on
            PE cores, element-wise and optimizer ops on the SIMD core), starting when its inputs
            are ready; off, ops run one at a time in program order (layer by layer).
        tensor_parallel: a MAC op's output channels are split across every instance of its core.
        allocation: with tensor parallelism, ``split`` gives every MAC op every instance of its core; ``per_op``
            gives each MAC op, per configuration, either every instance (its output channels split) or the one that
            frees up first, whichever scores better by ``mapping_objective`` (when it would finish, its energy, or
            their product), one instance on a tie (it leaves the others to ops that can run beside it). The two ends
            are Stream's: its layer-core allocation (a genetic algorithm giving each layer one core, minimising
            latency) and its inter-core tiling (a layer's output channels over every core of its type, 2.1.1's
            default mapping); the greedy choice between them per op is ours.
        fused: groups of Workload op ids computed as fused stacks: their intermediate tensors are
            produced and consumed a tile (of samples or rows) at a time, never leave the chip, and consumers
            start on the first tile of their producer.
        fusion_tiling: how a fused group is cut into tiles (``stream``: along samples then rows, as Stream 2.1.1 cuts
            it; ``rows``: into its rows only, the simpler rule, kept as an ablation; ``fusion_memory``).
        resident_fraction: share of each core's top memory that may hold tensors between ops
            (the rest is working space for the tiles of the running op); a fused group fits when what its
            ops hold while it runs tile by tile fits in it (:mod:`traincost.schedule.fusion_memory`).
        mapping_objective: what the per-op choice of loop order at a core's top memory minimises
            (``latency``, ``energy`` or ``edp``; ``traincost.cost.core``).
    """

    pipeline: bool = True
    tensor_parallel: bool = True
    allocation: str = "split"
    fused: tuple[tuple[int, ...], ...] = ()
    fusion_tiling: str = "stream"
    resident_fraction: float = DEFAULT_RESIDENT_FRACTION
    mapping_objective: str = "edp"

    def __post_init__(self) -> None:
        check_objective(self.mapping_objective)
        if self.fusion_tiling not in FUSION_TILINGS:
            raise ConfigError(f"fusion_tiling {self.fusion_tiling!r}: expected one of {', '.join(FUSION_TILINGS)}")
        if self.allocation not in ALLOCATIONS:
            raise ConfigError(f"allocation {self.allocation!r}: expected one of {', '.join(ALLOCATIONS)}")
        if not 0.0 <= self.resident_fraction <= 1.0:
            raise ConfigError(f"resident_fraction: {self.resident_fraction} is not in [0, 1]")
        seen: set[int] = set()
        for i, group in enumerate(self.fused):
            overlap = seen.intersection(group)
            if overlap:
                raise ConfigError(f"fused[{i}]: ops {sorted(overlap)} are already in another fused group")
            seen.update(group)

    @classmethod
    def from_mode(
        cls,
        mode: str,
        *,
        fused: tuple[tuple[int, ...], ...] = (),
        resident_fraction: float | None = None,
        mapping_objective: str = "edp",
        allocation: str = "split",
        fusion_tiling: str = "stream",
    ) -> SchedulePlan:
        """A plan by name: layer_by_layer, pipeline, tensor, pipeline_tensor, or stream_layer_by_layer, Stream 2.1.1's
        layer by layer (``fusion_cut_points: per-layer``): one op at a time, each MAC op split over every instance of its
        core, every tensor from off chip to the cores and back (no share of the top memory keeps a tensor between ops).
        ``resident_fraction`` None is the mode's: ``DEFAULT_RESIDENT_FRACTION``, 0 for stream_layer_by_layer.

        Raises:
            ConfigError: an unknown mode, or stream_layer_by_layer with a resident fraction above 0.
        """
        if mode == "stream_layer_by_layer" and resident_fraction:
            raise ConfigError(
                f"resident_fraction {resident_fraction}: mode stream_layer_by_layer keeps no tensor on chip between ops "
                "(0, or leave it out)"
            )
        options = {
            "fused": fused,
            "resident_fraction": resident_default(mode) if resident_fraction is None else resident_fraction,
            "mapping_objective": mapping_objective,
            "allocation": allocation,
            "fusion_tiling": fusion_tiling,
        }
        match mode:
            case "layer_by_layer":
                return cls(pipeline=False, tensor_parallel=False, **options)
            case "pipeline":
                return cls(pipeline=True, tensor_parallel=False, **options)
            case "tensor":
                return cls(pipeline=False, tensor_parallel=True, **options)
            case "pipeline_tensor":
                return cls(pipeline=True, tensor_parallel=True, **options)
            case "stream_layer_by_layer":
                return cls(pipeline=False, tensor_parallel=True, **options)
        raise ConfigError(f"schedule mode {mode!r}: expected one of {', '.join(MODES)}")


def resident_default(mode: str) -> float:
    """The resident fraction of a plan of ``mode`` that names none: ``DEFAULT_RESIDENT_FRACTION``, 0 in
    stream_layer_by_layer (every tensor through off-chip memory)."""
    return 0.0 if mode == "stream_layer_by_layer" else DEFAULT_RESIDENT_FRACTION


def read_fused_groups(path: str | os.PathLike[str]) -> tuple[tuple[int, ...], ...]:
    """Fused groups from a JSON file: ``{"groups": [[op, op, …], …]}`` (Workload op ids)."""
    file = Path(path)
    data = read_json(file)
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, list) or not all(isinstance(g, list) and all(isinstance(o, int) for o in g) for g in groups):
        raise ConfigError(f'{file}: expected {{"groups": [[op id, ...], ...]}}')
    return tuple(tuple(g) for g in groups)
