"""Per-op cost on one core, as arrays over (configurations × ops): the ZigZag-style analytical model.

MAC ops (``mac_cost``) are costed as a list of candidates, each scored and the best picked per op and per
configuration by the mapping objective, in the spirit of ZigZag's cost model evaluation. The modules, each using
only those above it:

- ``vocabulary``: the words every module shares (a tile, an operand's precision, the mappings above a core, the
  objectives, the price of a byte from outside, the cost record).
- ``gemm``: the GEMM view of an op on the core: its spatial unrolling, the array's steps and the extents a tile may
  take.
- ``memory``: what a memory level holds for an op: the instances at work, the copies of an element, the room a
  level leaves a resident tile.
- ``level_traffic``: the bytes each level reads and writes, their energy and the cycles of its ports.
- ``tiles``: the tile each memory level holds in an order, and the blocks a mapping keeps resident.
- ``orders``: the loop orders tried inside the core.
- ``traffic``: the elements that cross each boundary in a loop order, and the bytes that cross the core's edge.
- ``inside``: one order's latency and energy inside the core.
- ``candidates``: the candidates listed, scored and picked.
- ``mac``: ``mac_cost``, over the ways the PE axes may unroll; ``simd``: ``simd_cost``, element-wise ops.

The outermost boundary (core ↔ bus/off-chip, or a tensor already resident in the core) is returned as traffic
(``ext_in_bytes``, ``ext_write_bytes``) and not costed here, not even its write into or read out of the top memory:
where the data comes from is the scheduler's business, and the scheduler charges each byte that crosses it once:
written into the outermost memory of the core that keeps its operand as it arrives, read out of it as it leaves,
over the bus, and off chip at the off-chip memory's read or write energy.
"""

from traincost.cost.core.mac import mac_cost
from traincost.cost.core.simd import simd_cost
from traincost.cost.core.vocabulary import MAPPINGS, OBJECTIVES, CoreOpCost, ExternalPath, check_objective

__all__ = ["CoreOpCost", "ExternalPath", "mac_cost", "simd_cost", "MAPPINGS", "OBJECTIVES", "check_objective"]
