"""The words the single-core engine's modules share.

A tile is ``(m, n, r)`` elements per group of the GEMM view (``gemm``); an operand is ``W`` (weights), ``I``
(inputs) or ``O`` (outputs, kept and moved as partial sums until complete). Above a core the loop order keeps one
operand resident in its outermost memory (``MAPPINGS``); the dataflow's own mapping is ``NATIVE``. Candidates are
compared by an objective (``OBJECTIVES``) with their external bytes priced by an ``ExternalPath``; the chosen one's
cost is a ``CoreOpCost``. A band of reduction-innermost levels (``is_in_band``) is how a loop order inside the core
is named (``orders``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traincost.errors import ConfigError
from traincost.hardware.spec import Core, HardwareSpec

__all__ = [
    "BITS",
    "MAPPINGS",
    "RESIDENT",
    "OBJECTIVES",
    "TIE",
    "check_objective",
    "ExternalPath",
    "CoreOpCost",
    "Tile",
    "Precision",
    "innermost_level",
    "outermost_level",
    "NATIVE",
    "is_in_band",
]

BITS = 8.0


# the loop order above a core: which operand stays resident in its outermost memory
MAPPINGS = ("weight_resident", "input_resident", "output_resident")


RESIDENT = {"weight_resident": "W", "input_resident": "I", "output_resident": "O"}


OBJECTIVES = ("latency", "energy", "edp")


TIE = 1e-9  # candidates within this relative margin of the best are tied; the secondary metric decides


def check_objective(objective: str) -> str:
    """``objective`` if it is one of ``OBJECTIVES``.

    Raises:
        ConfigError: any other value.
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"mapping objective {objective!r}: expected one of {', '.join(OBJECTIVES)}")
    return objective


@dataclass(frozen=True, slots=True)
class ExternalPath:
    """What a byte from outside a core costs on its way in, per configuration: the mapping choice's price of
    external traffic (off chip, over the bus, written into the core's top memory)."""

    bandwidth_bytes_per_cycle: np.ndarray
    energy_pj_per_bit: np.ndarray

    @classmethod
    def of(cls, hardware: HardwareSpec, core: Core) -> ExternalPath:
        """Off-chip memory over the bus into ``core``'s top memory."""
        offchip, bus = hardware.offchip, hardware.bus
        return cls(
            bandwidth_bytes_per_cycle=np.minimum(offchip.bandwidth_bytes_per_cycle, bus.bandwidth_bytes_per_cycle),
            energy_pj_per_bit=offchip.energy_pj_per_bit + bus.energy_pj_per_bit + core.top.write_energy_pj_per_bit,
        )


@dataclass(frozen=True, slots=True)
class CoreOpCost:
    """Cost of ops on one core instance, arrays of shape (configurations, ops)."""

    latency_cycles: np.ndarray
    compute_cycles: np.ndarray
    utilization: np.ndarray
    energy_mac_pj: np.ndarray
    energy_level_pj: dict[str, np.ndarray]
    ext_in_bytes: dict[str, np.ndarray]  # into the top level from outside, per operand W, I, O (partial sums back)
    ext_write_bytes: np.ndarray  # out of the top level: outputs and partial sums
    core_shares: np.ndarray  # the op's work in units of one core's share: D / ceil(D / split), at most split
    mapping: np.ndarray  # index into MAPPINGS of the loop order chosen above the core (-1: not a MAC op)
    # whether ``mapping`` is the loop order below the core's top memory, which holds the whole op (``below_top_blocks``)
    mapping_below_top: np.ndarray
    reduction_levels: np.ndarray  # the chosen band: reduction innermost over the array and band - 1 levels (-1: no MAC)
    held_rows: np.ndarray  # rows whose partial sums the PEs' output memory holds across the reduction (0: not that order)
    held_columns: np.ndarray  # the same, columns with the inputs reused across them (0: not that order)
    band_grown: np.ndarray  # whether the band's output memories grew their block to their room (else the array's)
    inputs_latched: np.ndarray  # whether each input stays at the port over the output channels (``loop_orders``)
    # the chunk of the reduction the tiles inside the core run over, the output block kept above them across the
    # chunks (``chunked_view``; 0: all of R)
    reduction_chunk: np.ndarray
    # the columns of the band's weight tile where it was cut in R so that the input memories below it serve that many
    # columns (``band_within_weights``; 0: not that order)
    widened_columns: np.ndarray
    level_read_bytes: dict[str, np.ndarray]  # bytes read from each memory level, inside the core
    level_write_bytes: dict[str, np.ndarray]  # bytes written into each memory level, inside the core
    # which of the core's ``spatial_variants`` unrolled the op (0: the axes' own dims, and every non-MAC op)
    spatial_variant: np.ndarray | int = 0
    # whether the PE axes unrolled a conv gradient's loops as its primitive names them (``OWN_LOOPS``), not as its
    # forward convolution's
    own_loops: np.ndarray | bool = False


Tile = tuple[np.ndarray, np.ndarray, np.ndarray]  # (m, n, r) elements per group


@dataclass(frozen=True, slots=True)
class Precision:
    """Bytes per element of each operand on a core, arrays (configurations, 1): W weights, I inputs, O outputs, and
    the partial sums an unfinished output is kept and moved in."""

    final_bytes: dict[str, np.ndarray]  # W, I, O as stored once complete
    partial_sum_bytes: np.ndarray

    @classmethod
    def of(cls, core: Core) -> Precision:
        bits = core.precision_bits
        final = {"W": bits["weights"], "I": bits["inputs"], "O": bits["outputs"]}
        return cls(
            final_bytes={operand: (b / 8.0)[:, None] for operand, b in final.items()},
            partial_sum_bytes=(bits["partial_sums"] / 8.0)[:, None],
        )

    @property
    def tile_bytes(self) -> dict[str, np.ndarray]:
        """What one element of a resident tile takes: an output block accumulates in partial-sum precision."""
        return {"W": self.final_bytes["W"], "I": self.final_bytes["I"], "O": self.partial_sum_bytes}

    def bytes(self, operand: str, down: np.ndarray, up: np.ndarray, *, partial: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Elements over a boundary (``boundary_elems``) in bytes. Of an output's ``up`` elements, the first ``down`` (as
        many as come back down) are partial sums; the rest are final outputs, or partial sums too where ``partial``
        (a PE's own copy of an output, to be added to the other PEs' in the memory above: ``copies_per_element``)."""
        if operand != "O":
            return down * self.final_bytes[operand], up * self.final_bytes[operand]
        last = self.partial_sum_bytes if partial else self.final_bytes["O"]
        return down * self.partial_sum_bytes, down * self.partial_sum_bytes + (up - down) * last


def innermost_level(core: Core, operand: str) -> int:
    """The position in ``core.levels`` of the innermost level that keeps ``operand`` (-1: none does)."""
    return next((i for i, level in enumerate(core.levels) if operand in level.operands), -1)


def outermost_level(core: Core, operand: str) -> int | None:
    """The position in ``core.levels`` of the outermost level that keeps ``operand`` (None: none does)."""
    return next((i for i in reversed(range(len(core.levels))) if operand in core.levels[i].operands), None)


NATIVE = {"weight_stationary": "weight_resident", "output_stationary": "output_resident", "simd": "weight_resident"}


def is_in_band(level: int, band: int) -> bool:
    """Whether the loops directly above ``level``'s tile (-1: the PE array's) keep the reduction innermost: the
    array's when ``band`` >= 1, then the ``band`` - 1 innermost memory levels'."""
    return level + 1 < band
