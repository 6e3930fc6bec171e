"""Argument types of the command line: each checks the range the workflow config's schema allows.

Also the model arguments that ``export`` and ``cost`` share: a zoo name or a factory path, and a
factory model's sample.

argparse reports a value these refuse as ``argument --flag: 'value': expected …``, naming the flag as
the user typed it, before any work starts; the ranges are those of ``workflow/schemas/config.schema.yaml``
for the same setting, so a value the workflow refuses is refused here too.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from traincost.errors import ConfigError

__all__ = [
    "add_model_args",
    "fraction",
    "non_negative_number",
    "positive_int",
    "positive_number",
    "resolve_model",
    "sample_shape",
    "unit_interval_open",
]


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


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return value


def sample_shape(text: str) -> tuple[int, ...]:
    """One sample's shape, sizes separated by commas (``3,224,224``)."""
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected sizes separated by commas, e.g. 3,224,224") from None
    if not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive sizes, e.g. 3,224,224")
    return shape


def add_model_args(parser: argparse.ArgumentParser, *, flag: str) -> None:
    """The model (``flag``: ``--model``, or ``model`` for a positional) and a factory model's sample."""
    help_text = "a zoo name (`traincost models`) or a factory path package.module:function"
    if flag.startswith("--"):
        parser.add_argument(flag, dest="model", required=True, help=help_text)
    else:
        parser.add_argument(flag, help=help_text)
    parser.add_argument("--input-shape", type=sample_shape, help="a factory model's sample shape (no batch), e.g. 3,224,224")
    parser.add_argument("--classes", type=positive_int, default=1000, help="a factory model's output classes (default 1000)")


def resolve_model(args: argparse.Namespace) -> str:
    """The architecture name of ``args.model``: a zoo name as it is, a factory path registered first.

    Raises:
        ConfigError: a factory path without ``--input-shape``, or a zoo name with one.
    """
    from traincost import models  # torch: only when a command runs

    if ":" not in args.model:
        if args.input_shape is not None:
            raise ConfigError(f"--input-shape: only for a factory path; the zoo model {args.model!r} knows its input")
        return args.model
    if args.input_shape is None:
        raise ConfigError(f"--input-shape: required for the factory path {args.model!r} (one sample's shape, e.g. 3,224,224)")
    return models.register_factory(args.model, input_shape=args.input_shape, num_classes=args.classes)
