"""Every bound traincost puts on its inputs, in one place: what a file, a table, a graph, a hardware description or
a command-line number may be before traincost refuses it in one line naming the bound (``config/README.md`` lists
them for users). Each holds what the shipped studies need many times over and stops what would exhaust memory or
time, or wrap a total around, before any of it is allocated.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = [
    "MAX_BATCH",
    "MAX_CONFIGS",
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_DRAWN_BYTES",
    "MAX_EXPONENT",
    "MAX_EXPRESSION_CHARS",
    "MAX_EXTERNAL_DATA_BYTES",
    "MAX_FILE_BYTES",
    "MAX_INTEGER",
    "MAX_LINE_CHARS",
    "MAX_MESSAGE_CHARS",
    "MAX_SEED",
    "MAX_TABLE_MIB",
    "MAX_YAML_BYTES",
]

# --- configuration files (traincost.config_files) ---
MAX_FILE_BYTES = 8 * 2**20
"""Largest JSON configuration file read (8 MiB; the shipped ones are under 10 KiB)."""
MAX_YAML_BYTES = 2**20
"""Largest YAML file read (1 MiB: 1.4 s and 200 MB at most to parse, ``bench/yaml_reader.py``; the shipped ones,
ZigZag's and Stream's included, are under 10 KiB)."""
MAX_DEPTH = 100
"""Deepest nesting of lists and mappings in a YAML or JSON file (the shipped ones nest 6 deep)."""
MAX_INTEGER = 2**63 - 1
"""Largest integer magnitude a configuration file may hold (what 64-bit arithmetic holds)."""

# --- messages (traincost.errors, traincost.config_files) ---
MAX_MESSAGE_CHARS = 300
"""Longest value quoted in a message."""
MAX_LINE_CHARS = 1000
"""Longest error line; a longer one keeps its start (what is at fault) and its end (what was expected)."""

# --- hardware descriptions (traincost.hardware) ---
MAX_EXPRESSION_CHARS = 1000
"""Longest expression evaluated (the shipped hardware files use under 60)."""
MAX_EXPONENT = 64
"""Largest exponent magnitude of ``**``."""
MAX_CONFIGS = 1_000_000
"""Most configurations of one sweep grid, checked from the list lengths before expansion; raised per sweep with
``hardware_sweeps.<name>.max_configs`` or ``traincost sweep --max-configs``."""
MAX_COUNT = 65_536
"""Most instances of a core (``count``) or of a memory (``instances``), and most PEs along one axis of an array, at
any configuration: the scheduler keeps a clock per instance, so a count of a billion would take gigabytes."""

# --- tables and graphs ---
MAX_TABLE_MIB = ContextVar("MAX_TABLE_MIB", default=1024)
"""Largest Parquet table read, in MiB of memory as its footer foretells it (the larger of its uncompressed bytes and
8 bytes a value): the studies' largest is under 10 MiB. ``traincost --max-table-mib`` sets it."""
MAX_EXTERNAL_DATA_BYTES = 8 * 2**30
"""Most bytes of external weight data an ONNX file may make traincost read (8 GiB: VGG-16's weights are 0.55 GB),
checked from the data files' sizes before any is read."""

# --- command-line numbers (traincost.cli.arguments, traincost.signature) ---
MAX_BATCH = 2**20
"""Largest batch a command takes (1,048,576 samples; the drawn batch is bounded in bytes too: ``MAX_DRAWN_BYTES``)."""
MAX_SEED = 2**31 - 1
"""Largest seed (what CP-SAT, numpy and torch all take)."""
MAX_DRAWN_BYTES = 8 * 2**30
"""Largest batch of inputs drawn to trace or check a model (8 GiB; ResNet-50's 224 x 224 images take 0.6 MB a
sample)."""
