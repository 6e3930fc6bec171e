"""Hardware as data: HDA descriptions (YAML), their validation, and sweeps over their parameters."""

from traincost.hardware.load import HardwareError, load_hardware, read_hardware_yaml
from traincost.hardware.spec import Core, CoreLevel, CoreLink, HardwareSpec, Link, MemoryLevel, PEAxis
from traincost.hardware.sweep import config_id, expand_grid, shard, shard_rows

__all__ = [
    "HardwareError",
    "HardwareSpec",
    "Core",
    "CoreLevel",
    "CoreLink",
    "Link",
    "MemoryLevel",
    "PEAxis",
    "load_hardware",
    "read_hardware_yaml",
    "expand_grid",
    "config_id",
    "shard",
    "shard_rows",
]
