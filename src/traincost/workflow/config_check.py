"""The workflow config checked before any job runs: each file read strictly, the schema with one short line
per problem, then the cross-checks the schema cannot express (a key naming another, a file that must exist), and
what the config needs installed (the ONNX front end needs ONNX Runtime Training, the ``ort`` extra)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import math
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd

from traincost.config_files import read_yaml, shorten
from traincost.errors import ConfigError
from traincost.fpga.devices import load_fpga_catalog
from traincost.limits import MAX_CONFIGS
from traincost.signature import LOSSES
from traincost.workflow.plan import frontend_of

__all__ = ["check_config", "config_problems", "missing_requirements", "ort_training_installed"]

Config = Mapping[str, Any]


def check_config(config: Config, configfiles: Iterable[str | os.PathLike[str]], schema: str | os.PathLike[str]) -> None:
    """Read every config file strictly (duplicate keys, aliases, NaN/inf, size), then check ``config`` against the
    JSON schema; raise ``ValueError`` with the first five problems, each on one short line, the deepest reason first."""
    for configfile in configfiles:
        read_yaml(configfile)
    rules = read_yaml(schema)
    validator = jsonschema.validators.validator_for(rules)(rules)
    errors = [_deepest(error) for error in validator.iter_errors(config)]
    errors.sort(key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise ValueError(
            "invalid config: "
            + "; ".join(f"{'.'.join(map(str, e.absolute_path)) or 'config'}: {shorten(e.message, 200)}" for e in errors[:5])
        )


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The deepest reason of "not valid under any of the given schemas"."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
    return error


def config_problems(config: Config, *, repo: Path) -> list[str]:
    """Cross-checks the schema cannot express, each naming its key (``repo`` holds ``data/paper``)."""
    problems = _workload_problems(config) + _monet_problems(config) + _mtrain_problems(config, repo) + _tiered_problems(config)
    for i, name in enumerate(config["figure3"]["workloads"]):
        if name not in config["workloads"]:
            problems.append(f"figure3.workloads[{i}]: {name!r} is not a key of workloads")
        elif ":" in config["workloads"][name].get("model", ":"):
            problems.append(f"figure3.workloads[{i}]: {name!r} is not a zoo model (torch's measurement builds it from the zoo)")
    return problems


def _workload_problems(config: Config) -> list[str]:
    problems = []
    for name, workload in config["workloads"].items():
        problems += _model_problems(name, workload, frontend_of(workload, config.get("frontend", "onnx")))
        if workload["optimizer"] not in config["optimizers"]:
            problems.append(
                f"workloads.{name}.optimizer: {workload['optimizer']!r} is not a key of optimizers "
                f"({', '.join(sorted(config['optimizers']))})"
            )
    return problems


def _monet_problems(config: Config) -> list[str]:
    problems = []
    for name, sweep in config["hardware_sweeps"].items():
        if sweep["workload"] not in config["workloads"]:
            problems.append(f"hardware_sweeps.{name}.workload: {sweep['workload']!r} is not a key of workloads")
        for key in ("hardware", "fusion"):
            if key in sweep and not Path(sweep[key]).is_file():
                problems.append(f"hardware_sweeps.{name}.{key}: no such file {sweep[key]!r}")
        if Path(sweep["hardware"]).is_file():
            problems += _grid_problems(name, sweep)
    for key, name in config["monet_hardware"].items():
        if name is not None and name not in config["hardware_sweeps"]:
            problems.append(f"monet_hardware.{key}: {name!r} is not a key of hardware_sweeps")
    return problems + _section5_problems(config)


def _section5_problems(config: Config) -> list[str]:
    """MONET's fusion and checkpointing studies: their workloads and files."""
    problems = []
    fusion = config["monet_fusion"]
    if fusion is not None:
        if fusion["workload"] not in config["workloads"]:
            problems.append(f"monet_fusion.workload: {fusion['workload']!r} is not a key of workloads")
        for key in ("hardware", "manual"):
            if not Path(fusion[key]).is_file():
                problems.append(f"monet_fusion.{key}: no such file {fusion[key]!r}")
    study = config["monet_checkpoint"]
    if study is not None:
        for key in ("workload", "figure11_workload"):
            if key in study and study[key] not in config["workloads"]:
                problems.append(f"monet_checkpoint.{key}: {study[key]!r} is not a key of workloads")
        if not Path(study["hardware"]).is_file():
            problems.append(f"monet_checkpoint.hardware: no such file {study['hardware']!r}")
    return problems


def _model_problems(name: str, workload: Config, frontend: str) -> list[str]:
    """What a workload's model needs beside it: a factory model its input_shape, a module its inputs, an ONNX
    file to exist; and no key that belongs to another kind of model."""
    at = f"workloads.{name}"
    model = workload.get("model", "")
    kind = "onnx" if "onnx" in workload else "module" if "module" in workload else "factory" if ":" in model else "zoo"
    allowed = {
        "zoo": {"options"},
        "factory": {"input_shape"},
        "module": {"kwargs", "inputs", "loss", "labels", "output"},
        "onnx": {"inputs", "loss", "output"},
    }
    given = {key for key in ("options", "input_shape", "kwargs", "inputs", "output", "labels") if workload.get(key)}
    given |= {"loss"} if workload.get("loss", "cross_entropy") != "cross_entropy" else set()
    problems = [f"{at}.{key}: not for a {kind} model" for key in sorted(given - allowed[kind])]
    if kind == "factory" and "input_shape" not in workload:
        problems.append(f"{at}: the factory model {model!r} needs input_shape")
    if kind == "module" and "inputs" not in workload:
        problems.append(f"{at}: the module {workload['module']!r} needs inputs (name -> shape, dtype, range)")
    if kind == "onnx" and not Path(workload["onnx"]).is_file():
        problems.append(f"{at}.onnx: no such file {workload['onnx']!r}")
    for input_name, spec in (workload.get("inputs") or {}).items():
        int64, bounds = spec.get("dtype") == "int64", spec.get("range")
        if int64 and (bounds is None or bounds[0] >= bounds[1]):
            problems.append(f"{at}.inputs.{input_name}.range: an int64 input needs [low, high] with low < high")
        if not int64 and bounds is not None:
            problems.append(f"{at}.inputs.{input_name}.range: only int64 inputs take a range")
    if kind == "onnx" and ":" in workload.get("loss", ""):
        takes = f"{', '.join(LOSSES[:-1])} or {LOSSES[-1]}"
        problems.append(f"{at}.loss: an ONNX file takes {takes} (a loss function needs the torch module)")
    if frontend == "torch":
        if kind == "onnx":
            problems.append(f"{at}.frontend: torch traces a torch module; an ONNX file is costed by the onnx front end")
        if workload.get("attention", "materialised") != "materialised":
            problems.append(f"{at}.attention: for the onnx front end; torch costs each attention as torch runs it")
    return problems


def _grid_problems(name: str, sweep: Config) -> list[str]:
    """Swept names that are not parameters of the template, and a grid past the sweep's limit: caught here (so by
    ``snakemake -n``), not in a shard job."""
    try:
        data = read_yaml(sweep["hardware"])
    except ConfigError as err:
        return [f"hardware_sweeps.{name}.hardware: {err}"]
    if not isinstance(data, dict):
        kind = type(data).__name__
        return [f"hardware_sweeps.{name}.hardware: {sweep['hardware']} is {kind}; expected a hardware YAML mapping"]
    parameters = data.get("parameters") or {}
    problems = [
        f"hardware_sweeps.{name}.grid.{key}: not a parameter of {sweep['hardware']} (parameters: {', '.join(parameters)})"
        for key in sweep["grid"]
        if key not in parameters
    ]
    size = math.prod(len(values) for values in sweep["grid"].values())
    most = sweep.get("max_configs", MAX_CONFIGS)
    if size > most:
        problems.append(
            f"hardware_sweeps.{name}.grid: {size:,} configurations, more than max_configs {most:,} (raise "
            f"hardware_sweeps.{name}.max_configs)"
        )
    return problems


def _mtrain_problems(config: Config, repo: Path) -> list[str]:
    study = config.get("mtrain")
    if study is None:
        return []
    problems = _mtrain_file_problems(study)
    paper_models = set(pd.read_csv(repo / "data/paper/mtrain.csv")["model"].dropna())
    for model, name in study["workloads"].items():
        if name not in config["workloads"]:
            problems.append(f"mtrain.workloads.{model}: {name!r} is not a key of workloads")
        if model not in paper_models:
            problems.append(
                f"mtrain.workloads.{model}: not a model of the paper's tables "
                f"(data/paper/mtrain.csv: {', '.join(sorted(paper_models))})"
            )
    clusters = load_fpga_catalog(study["devices"]).clusters if Path(study["devices"]).is_file() else None  # raises naming the key
    for cluster in study["clusters"]:
        if cluster not in study["ratio_step"]:
            problems.append(f"mtrain.ratio_step: no step for cluster {cluster!r}")
        if clusters is not None and cluster not in clusters:
            known = ", ".join(sorted(clusters))
            problems.append(f"mtrain.clusters: {cluster!r} is not a cluster of {study['devices']} ({known})")
    for cluster, models in study["table3"]["cells"].items():
        if cluster not in study["ratio_step"]:
            problems.append(f"mtrain.ratio_step: no step for cluster {cluster!r} (mtrain.table3.cells)")
        unknown = [m for m in models if m not in study["workloads"]]
        problems += [f"mtrain.table3.cells.{cluster}: {m!r} is not a key of mtrain.workloads" for m in unknown]
    scaling = study["scaling"]
    if scaling["model"] not in study["workloads"]:
        problems.append(f"mtrain.scaling.model: {scaling['model']!r} is not a key of mtrain.workloads")
    if scaling["cluster"] not in study["ratio_step"]:
        problems.append(f"mtrain.ratio_step: no step for cluster {scaling['cluster']!r} (mtrain.scaling)")
    calibration = study.get("calibration") or {}
    if calibration.get("workload", "vgg16") not in config["workloads"]:
        problems.append(f"mtrain.calibration.workload: {calibration.get('workload', 'vgg16')!r} is not a key of workloads")
    return problems + _vgg16_input_problems(config, study)


def _vgg16_input_problems(config: Config, study: Config) -> list[str]:
    """The vgg16_input ablation needs MTrain's VGG-16 and the workload of its 224x224 input (mtrain.vgg16_224)."""
    if not ((config.get("ablations") or {}).get("mtrain") or {}).get("vgg16_input"):
        return []
    if "vgg16" not in study["workloads"]:
        return ["ablations.mtrain.vgg16_input: mtrain.workloads has no vgg16 whose input it would change"]
    if study.get("vgg16_224") not in config["workloads"]:
        return [f"mtrain.vgg16_224: {study.get('vgg16_224')!r} is not a key of workloads (ablations.mtrain.vgg16_input)"]
    return []


def _mtrain_file_problems(study: Config) -> list[str]:
    """The MTrain files that must exist: the device catalog, the IP constants, the calibration targets if given."""
    problems = []
    if not Path(study["devices"]).is_file():
        problems.append(f"mtrain.devices: no such file {study['devices']!r}")
    if not Path(study.get("ips", "")).is_file():
        problems.append(f"mtrain.ips: no such file {study.get('ips')!r}")
    calibration = study.get("calibration") or {}
    if "targets" in calibration and not Path(calibration["targets"]).is_file():
        problems.append(f"mtrain.calibration.targets: no such file {calibration['targets']!r}")
    return problems


def _tiered_problems(config: Config) -> list[str]:
    study = config.get("tiered")
    if study is None:
        return []
    problems = []
    if not Path(study["hardware"]).is_file():
        problems.append(f"tiered.hardware: no such file {study['hardware']!r}")
    for key in ("motivation_workload", "ratio_workload"):
        if study[key] not in study["workloads"]:
            problems.append(f"tiered.{key}: {study[key]!r} is not one of tiered.workloads")
    if study["figure_ratio"] not in study["ratios"]:
        problems.append(f"tiered.figure_ratio: {study['figure_ratio']} is not one of tiered.ratios")
    for variant, ratios in study.get("variant_ratios", {}).items():
        if study["figure_ratio"] not in ratios:
            problems.append(f"tiered.variant_ratios.{variant}: must include figure_ratio {study['figure_ratio']}")
    return problems


def ort_training_installed() -> bool:
    """Whether ``onnxruntime.training`` is importable, found without importing it (importing ONNX Runtime Training
    takes seconds and, through ORTModule, torch)."""
    found = importlib.util.find_spec("onnxruntime")
    if found is None or not found.submodule_search_locations:
        return False
    return importlib.machinery.PathFinder.find_spec("training", list(found.submodule_search_locations)) is not None


def missing_requirements(config: Config, *, ort_installed: bool) -> list[str]:
    """What the config needs that is not installed, one line per config field that asks for it: a workload built by
    the onnx front end (the top-level ``frontend``, a workload's own ``frontend``, or an ``onnx`` file) needs ONNX
    Runtime Training (``ort_installed``), whose last release has wheels for Python 3.11 and older only."""
    if ort_installed:
        return []
    by_field: dict[str, list[str]] = {}
    for name, workload in config["workloads"].items():
        if frontend_of(workload, config.get("frontend", "onnx")) != "onnx":
            continue
        if "onnx" in workload:
            field = f"workloads.{name}.onnx"
        elif workload.get("frontend"):
            field = f"workloads.{name}.frontend"
        else:
            field = "frontend"
        by_field.setdefault(field, []).append(name)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    needs = f"needs ONNX Runtime Training, which this Python ({python}) cannot import: pip install -e '.[ort]' on Python 3.11"
    problems = []
    for field, names in by_field.items():
        if field == "frontend":
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            problems.append(
                f"frontend: onnx (the front end of {shown}) {needs}, or set the front end to torch "
                "(snakemake --config frontend=torch)"
            )
        elif field.endswith(".onnx"):
            problems.append(f"{field}: an ONNX file is costed by the onnx front end, which {needs}")
        else:
            problems.append(f"{field}: onnx {needs}, or set it to torch")
    return problems
