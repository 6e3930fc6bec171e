"""The vectorised analytical cost model: per-op, per-core latency and energy over configurations."""

from traincost.cost.core import CoreOpCost, mac_cost, simd_cost
from traincost.cost.optable import MAC_KINDS, OpTable, op_table

__all__ = ["CoreOpCost", "MAC_KINDS", "OpTable", "mac_cost", "op_table", "simd_cost"]
