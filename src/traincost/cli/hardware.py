"""``traincost hardware import zigzag|stream``: another tool's hardware description as a traincost one."""

from __future__ import annotations

import argparse
from pathlib import Path

from traincost.cli.arguments import Command, positive_int, positive_number

__all__ = ["hardware_commands"]


def _cmd_hardware(args: argparse.Namespace) -> None:
    from traincost.api import import_hardware
    from traincost.hardware import HardwareError

    if args.format == "zigzag" and args.operand_bits:
        raise HardwareError("--operand-bits applies to stream files (a ZigZag core gives its own input_precision)")
    if args.format == "stream" and (args.mapping or args.offchip):
        raise HardwareError("--mapping and --offchip apply to zigzag files (a Stream file names its off-chip core)")
    hardware = import_hardware(
        args.input,
        kind=args.format,
        out=args.out,
        mapping=args.mapping,
        unroll=args.unroll,
        offchip=args.offchip,
        operand_bits=args.operand_bits,
        mac_energy_pj=args.mac_energy_pj,
    )
    (core, *others) = hardware.cores
    print(
        f"{args.out}: {hardware.name}, {len(hardware.cores)} core kind(s), {int(core.pes[0])} PEs x {int(core.count[0])} "
        f"in {core.name!r}, {len(hardware.memories)} on-chip memories"
        + (f", and {', '.join(c.name for c in others)}" if others else "")
        + f" ({hardware.description})"
    )


def hardware_commands(command: Command) -> None:
    """The ``hardware`` subcommand."""
    cmd = command(
        "hardware",
        _cmd_hardware,
        "import a ZigZag or Stream hardware description as a traincost hardware YAML",
        outputs=("--out",),
    )
    cmd.add_argument("action", choices=["import"], help="what to do (import: translate another tool's file)")
    cmd.add_argument("format", choices=["zigzag", "stream"], help="zigzag: one core file; stream: an accelerator listing cores")
    cmd.add_argument("input", type=Path, help="the ZigZag hardware YAML, or Stream's accelerator YAML")
    cmd.add_argument(
        "--mapping",
        type=Path,
        help="zigzag: mapping YAML with the spatial unrolling (default: ZigZag's bundled mapping of the same name, "
        "else its default.yaml)",
    )
    cmd.add_argument("--unroll", help="which loop dimension each array dimension unrolls, e.g. D1=K,D2=C or D3=OX:4")
    cmd.add_argument("--offchip", help="zigzag: the memory that is off-chip DRAM (default: the one named like dram)")
    cmd.add_argument(
        "--operand-bits",
        type=positive_int,
        help="stream: the bits of the workload's tensors, as Stream sizes each operand by its tensor's element type "
        "(partial sums at each core's accumulator precision; default: the core files' operand_precision)",
    )
    cmd.add_argument(
        "--mac-energy-pj",
        type=positive_number,
        help="pJ per MAC, flat: instead of an IMC array's in-memory-computing model, or where no unit_energy",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output traincost hardware YAML")
