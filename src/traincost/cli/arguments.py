"""Argument types of the command line: each checks the range the workflow config's schema allows.

Also what several subcommand modules share: the ``Command`` each one's ``*_commands`` function adds its
subcommands with; the model arguments that ``export`` and ``cost`` share (a zoo name, a factory path with
its keyword arguments, inputs and loss, or an ONNX file); and the argument groups of the optimizer, the
workload tables, the hardware and the resident fraction.

argparse reports a value these refuse as ``argument --flag: 'value': expected …``, naming the flag as
the user typed it, before any work starts; the ranges are those of ``workflow/schemas/config.schema.yaml``
for the same setting, so a value the workflow refuses is refused here too.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from traincost.errors import ConfigError
from traincost.limits import MAX_BATCH, MAX_SEED

if TYPE_CHECKING:
    import onnx

    from traincost import models
    from traincost.frontend.shared.optimizer import OptimizerSpec
    from traincost.schedule import SchedulePlan
    from traincost.signature import InputSpec

__all__ = [
    "Command",
    "add_model_args",
    "forward_graph",
    "fraction",
    "json_object",
    "non_negative_number",
    "optimizer_args",
    "optimizer_spec",
    "positive_int",
    "batch_size",
    "seed_value",
    "positive_number",
    "allocation",
    "fusion_tiling",
    "resident_fraction",
    "resident_share",
    "schedule_plan",
    "sample_shape",
    "unit_interval_open",
    "workload_and_hardware",
    "workload_tables",
]


class Command(Protocol):
    """What a module's ``*_commands`` function is given: ``command(name, handler, help, outputs=...)`` adds a subcommand
    and returns its parser. ``outputs`` are the flags of the files the subcommand writes (each checked writable, and
    not one of its inputs, before it runs)."""

    def __call__(
        self,
        name: str,
        handler: Callable[[argparse.Namespace], None],
        help_text: str,
        *,
        outputs: Sequence[str] = (),
    ) -> argparse.ArgumentParser: ...


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number")
    return value


def _checked(accept: Callable[[float], bool], expected: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = _number(text)
        if not accept(value):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value

    parse.__name__ = expected
    return parse


positive_number = _checked(lambda v: v > 0, "a number > 0")
non_negative_number = _checked(lambda v: v >= 0, "a number >= 0")
fraction = _checked(lambda v: 0 <= v <= 1, "a fraction in [0, 1]")
unit_interval_open = _checked(lambda v: 0 <= v < 1, "a number in [0, 1)")


def _integer_in(low: int, high: int | None, expected: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value

    parse.__name__ = expected
    return parse


positive_int = _integer_in(1, None, "an integer >= 1")
batch_size = _integer_in(1, MAX_BATCH, f"a batch size from 1 to {MAX_BATCH:,} (traincost.limits.MAX_BATCH)")
seed_value = _integer_in(0, MAX_SEED, f"a seed from 0 to {MAX_SEED:,}")


def sample_shape(text: str) -> tuple[int, ...]:
    """One sample's shape, sizes separated by commas (``3,224,224``)."""
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected sizes separated by commas, e.g. 3,224,224") from None
    if not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive sizes, e.g. 3,224,224")
    return shape


def add_model_args(parser: argparse.ArgumentParser, *, positional: bool) -> None:
    """The model and what a user's module or ONNX file needs said about it (shared by ``export`` and ``cost``).

    ``positional``: the model is the positional ``model`` (a zoo name, a factory path or an ``.onnx`` file);
    otherwise one of ``--model`` (a zoo name or a factory path), ``--module`` or ``--onnx``.
    """
    if positional:
        parser.add_argument("model", help="a zoo name, a factory path package.module:function or an .onnx file")
    else:
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--model", help="a zoo name (`traincost models`) or a factory path package.module:function")
        group.add_argument("--module", dest="model", help="a factory path package.module:function returning a torch nn.Module")
        group.add_argument("--onnx", type=Path, help="a forward graph exported for training (README: Cost your own model)")
    parser.add_argument("--name", help="the name every output carries (default: the function's or file's name)")
    parser.add_argument("--kwargs", type=json_object, default={}, help="a factory's keyword arguments, a JSON object")
    parser.add_argument(
        "--inputs",
        type=json_object,
        help='the forward\'s inputs, JSON: {"tokens": {"shape": [128], "dtype": "int64", "range": [0, 30522]}} (no batch)',
    )
    parser.add_argument("--input-shape", type=sample_shape, help="one float32 input named input, e.g. 3,224,224")
    parser.add_argument(
        "--loss",
        default="cross_entropy",
        help="cross_entropy (classes on dimension 1, as torch takes them), token_cross_entropy (classes on the last axis: "
        "per-token logits), mse, or package.module:loss_fn",
    )
    parser.add_argument(
        "--labels",
        type=json_object,
        help='what the loss reads as labels, JSON, one sample: {"shape": [3], "dtype": "float32"} for a loss function '
        "(default: int64 class ids shaped like the output without its last axis); for a cross-entropy, its class ids, "
        "checked against the output",
    )
    parser.add_argument(
        "--output",
        help="the output the loss reads: an entry of a module's ModelOutput, dict or tuple (default: loss, logits, "
        "sample, out, else the first tensor), or an ONNX file's graph output (required if it has several)",
    )


def json_object(text: str) -> dict[str, object]:
    """A JSON object, read as strictly as a configuration file (no duplicate keys, no NaN)."""
    from traincost.config_files import parse_json, shorten  # noqa: PLC0415

    try:
        value = parse_json(text, shorten(repr(text), 80))
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{shorten(repr(text), 80)}: expected a JSON object")
    return value


def optimizer_args(parser: argparse.ArgumentParser) -> None:
    """The optimizer and its hyperparameters (``train-graph``, ``measure-memory``)."""
    group = parser.add_argument_group("optimizer (torch.optim semantics)")
    group.add_argument("--optimizer", required=True, choices=["sgd", "sgd_momentum", "adam", "adamw"], help="optimizer kind")
    group.add_argument("--lr", type=positive_number, required=True, help="learning rate")
    group.add_argument("--momentum", type=unit_interval_open, default=0.9, help="momentum coefficient (sgd_momentum)")
    group.add_argument("--beta1", type=unit_interval_open, default=0.9, help="first-moment decay (adam, adamw)")
    group.add_argument("--beta2", type=unit_interval_open, default=0.999, help="second-moment decay (adam, adamw)")
    group.add_argument("--eps", type=positive_number, default=1e-8, help="denominator term (adam, adamw)")
    group.add_argument("--weight-decay", type=non_negative_number, default=0.0, help="L2 penalty (decoupled for adamw)")


def optimizer_spec(args: argparse.Namespace) -> OptimizerSpec:
    """The optimizer :func:`optimizer_args` read."""
    from traincost.frontend.shared.optimizer import OptimizerSpec

    return OptimizerSpec(
        kind=args.optimizer,
        lr=args.lr,
        momentum=args.momentum,
        beta1=args.beta1,
        beta2=args.beta2,
        eps=args.eps,
        weight_decay=args.weight_decay,
    )


def workload_tables(cmd: argparse.ArgumentParser) -> None:
    """The two tables of a Workload, ``--ops`` and ``--tensors``."""
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")


def workload_and_hardware(cmd: argparse.ArgumentParser) -> None:
    """The Workload's tables and one hardware YAML."""
    workload_tables(cmd)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware YAML (evaluated at its default configuration)")


# traincost.schedule.plan.MODES, written out so that `traincost --help` does not import the scheduler
SCHEDULE_MODES = ("layer_by_layer", "pipeline", "tensor", "pipeline_tensor", "stream_layer_by_layer")


def schedule_mode(cmd: argparse.ArgumentParser) -> None:
    """``--mode`` of the scheduler (``sweep``, the fusion and checkpointing commands)."""
    cmd.add_argument(
        "--mode",
        default="pipeline_tensor",
        choices=SCHEDULE_MODES,
        help="how ops meet the cores (stream_layer_by_layer: one op at a time over every instance of its core, every "
        "tensor through off-chip memory, as Stream's layer by layer)",
    )


def resident_fraction(cmd: argparse.ArgumentParser) -> None:
    """``--resident-fraction`` of the scheduler (``sweep``, the fusion and checkpointing commands)."""
    cmd.add_argument(
        "--resident-fraction",
        type=fraction,
        help="share of a core's top memory that keeps tensors between ops and holds fused groups (default 0.5; 0 in "
        "mode stream_layer_by_layer)",
    )


def resident_share(args: argparse.Namespace) -> float:
    """``--resident-fraction`` as given, else its default under the command's ``--mode`` (if it has one)."""
    from traincost.schedule.plan import resident_default  # noqa: PLC0415 - `traincost --help` does not import the scheduler

    return args.resident_fraction if args.resident_fraction is not None else resident_default(getattr(args, "mode", ""))


def fusion_tiling(cmd: argparse.ArgumentParser) -> None:
    """``--fusion-tiling`` of the fusion memory model (``sweep``, the fusion and checkpointing commands)."""
    cmd.add_argument(
        "--fusion-tiling",
        default="stream",
        choices=["stream", "rows"],
        help="how a fused group is cut into tiles: along samples then rows, as Stream cuts it (stream), or into its "
        "rows only (rows, the earlier rule)",
    )


def allocation(cmd: argparse.ArgumentParser) -> None:
    """``--allocation`` of the scheduler (``sweep``, ``compare-fusion``): :class:`traincost.schedule.SchedulePlan`."""
    cmd.add_argument(
        "--allocation",
        default="split",
        choices=["split", "per_op"],
        help="with tensor parallelism: every MAC op over every instance of its core (split), or each op on every "
        "instance or one, whichever the mapping objective prefers (per_op)",
    )


def schedule_plan(args: argparse.Namespace, fused: tuple[tuple[int, ...], ...]) -> SchedulePlan:
    """The scheduler's plan from a command's ``--mode``, ``--resident-fraction``, ``--fusion-tiling``, ``--allocation``
    and, where it has one, ``--mapping-objective``, with the fused groups ``fused``."""
    from traincost.schedule import SchedulePlan  # noqa: PLC0415 - `traincost --help` does not import the scheduler

    return SchedulePlan.from_mode(
        args.mode,
        fused=fused,
        resident_fraction=args.resident_fraction,
        mapping_objective=getattr(args, "mapping_objective", "edp"),
        allocation=args.allocation,
        fusion_tiling=args.fusion_tiling,
    )


def forward_graph(
    args: argparse.Namespace, *, batch: int, seed: int, options: dict[str, object], inference: bool = False
) -> onnx.ModelProto:
    """The forward graph ``args`` name, with the metadata every later stage reads.

    A torch model (``torch_model``) is exported with ``options``; an ONNX file is checked and imported
    (``--inputs`` optional). With ``inference``, a torch module's eval-mode inference step
    (:func:`traincost.frontend.onnx.inference_graph.export_inference_step`) instead of its training-mode export.

    Raises:
        ConfigError: a flag that does not fit the kind of model, or a missing one.
    """
    from traincost.frontend.onnx.export import export_model
    from traincost.frontend.onnx.file_import import import_onnx
    from traincost.frontend.onnx.inference_graph import export_inference_step

    onnx_file = _onnx_file(args)
    if onnx_file is None:
        export = export_inference_step if inference else export_model
        return export(torch_model(args, options=options), batch=batch, seed=seed, options=options)
    if inference:
        raise ConfigError(f"--inference: for a torch module; an ONNX file ({onnx_file}) is imported as it was exported")
    if args.kwargs or options:
        raise ConfigError(f"--kwargs, --options: not for an ONNX file ({onnx_file})")
    if args.labels is not None:
        raise ConfigError(f"--labels: only for a torch module given by a factory path, not an ONNX file ({onnx_file})")
    inputs = _inputs(args)
    return import_onnx(onnx_file, batch=batch, seed=seed, name=args.name, loss=_loss(args), inputs=inputs, output=args.output)


def torch_model(args: argparse.Namespace, *, options: dict[str, object]) -> models.Model:
    """The torch model ``args`` name: a zoo name (with ``options``), or a factory path registered under ``--name`` with
    its ``--kwargs``, ``--inputs`` (or ``--input-shape``), ``--loss``, ``--labels`` and ``--output``.

    Raises:
        ConfigError: an ONNX file, a flag that does not fit the kind of model, or a missing one.
    """
    from traincost import models  # torch: only when a command runs
    from traincost.signature import parse_labels

    onnx_file = _onnx_file(args)
    if onnx_file is not None:
        raise ConfigError(f"{onnx_file}: an ONNX file is costed by the ONNX front end (--frontend onnx)")
    inputs, loss = _inputs(args), _loss(args)
    labels = parse_labels(args.labels, where="--labels") if args.labels is not None else None
    if labels is not None and ":" not in args.model:
        raise ConfigError(f"--labels: only for a torch module given by a factory path; {args.model!r} is a zoo model")
    if ":" not in args.model:
        given = {
            "--inputs": args.inputs,
            "--input-shape": args.input_shape,
            "--name": args.name,
            "--kwargs": args.kwargs,
            "--output": args.output,
        }
        extra = [flag for flag, value in given.items() if value] + (["--loss"] if loss != "cross_entropy" else [])
        if extra:
            raise ConfigError(f"{', '.join(extra)}: only for a factory path or an ONNX file; {args.model!r} is a zoo model")
        return args.model
    if inputs is None:
        raise ConfigError(f"--inputs or --input-shape: required for the factory path {args.model!r} (e.g. --input-shape 3,32,32)")
    if options:
        raise ConfigError(f"--options: for zoo models; give the factory path {args.model!r} its --kwargs")
    return models.factory_architecture(
        args.model, inputs=inputs, kwargs=args.kwargs, loss=loss, name=args.name, labels=labels, output=args.output
    )


def _onnx_file(args: argparse.Namespace) -> Path | None:
    return getattr(args, "onnx", None) or (Path(args.model) if args.model.endswith(".onnx") else None)


def _inputs(args: argparse.Namespace) -> tuple[InputSpec, ...] | None:
    """``--inputs`` or ``--input-shape`` (one of them), parsed."""
    from traincost.signature import InputSpec, parse_inputs

    if args.inputs is not None and args.input_shape is not None:
        raise ConfigError("--inputs and --input-shape: give one of them")
    if args.input_shape is not None:
        return (InputSpec("input", args.input_shape, "float32"),)
    return parse_inputs(args.inputs, where="--inputs") if args.inputs is not None else None


def _loss(args: argparse.Namespace) -> str:
    from traincost.signature import check_loss

    return check_loss(args.loss, where="--loss")
