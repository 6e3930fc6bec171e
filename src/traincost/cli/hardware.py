"""``traincost hardware import zigzag|stream``: another tool's hardware description as a traincost one."""

from __future__ import annotations

import argparse
from pathlib import Path

from traincost.cli.arguments import Command, positive_int, positive_number
from traincost.io import atomic_path

__all__ = ["hardware_commands"]


def _cmd_hardware(args: argparse.Namespace) -> None:
    from traincost.hardware import HardwareError, load_hardware
    from traincost.hardware.import_stream import stream_hardware
    from traincost.hardware.import_zigzag import hardware_yaml_text, parse_unroll, zigzag_hardware

    unroll = parse_unroll(args.unroll) if args.unroll else None
    if args.format == "zigzag":
        if args.operand_bits:
            raise HardwareError("--operand-bits applies to stream files (a ZigZag core gives its own input_precision)")
        data = zigzag_hardware(
            args.input, mapping=args.mapping, unroll=unroll, offchip=args.offchip, mac_energy_pj=args.mac_energy_pj
        )
    else:
        if args.mapping or args.offchip:
            raise HardwareError("--mapping and --offchip apply to zigzag files (a Stream file names its off-chip core)")
        data = stream_hardware(args.input, unroll=unroll, mac_energy_pj=args.mac_energy_pj, operand_bits=args.operand_bits)
    header = f"Written by `traincost hardware import {args.format} {args.input}`; see config/hardware/README.md."
    with atomic_path(args.out) as tmp:
        tmp.write_text(hardware_yaml_text(data, header=header))
        try:
            hardware = load_hardware(tmp)
        except HardwareError as err:
            raise HardwareError(
                f"{args.input}: the translation does not load: {str(err).replace(str(tmp), str(args.out))}"
            ) from err
    (core, *others) = hardware.cores
    print(
        f"{args.out}: {hardware.name}, {len(hardware.cores)} core kind(s), {int(core.pes[0])} PEs x {int(core.count[0])} "
        f"in {core.name!r}, {len(hardware.memories)} on-chip memories"
        + (f", and {', '.join(c.name for c in others)}" if others else "")
        + f" ({data['description']})"
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
