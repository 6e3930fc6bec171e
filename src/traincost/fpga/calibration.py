"""MTrain calibration: an IP's clock fitted so that its own published design reaches its own published throughput.

EF-Train's repository pins its design (Tm = Tn = 16 on ZCU102), its clock (100 MHz in its model) and the setting of
its throughput (VGG-16's convolutions at 224 × 224, batch 16); its model gives 47.99 GFLOPS there and the paper
measured 46.99. What the model leaves out on the board is folded into one constant: the clock at which our port of
the model reaches the measured throughput. DarkFPGA publishes no FP32 throughput on its own board, so nothing of it
is fitted. Never fitted to MTrain's own results. The table also says what the fit changes, for the calibration
workload with and without it: which IP and design each FPGA of each cluster gets, and the IP's single-FPGA baseline
(Figures 9-11) on each cluster's strongest FPGA.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from traincost.bisection import bisect
from traincost.errors import ConfigError
from traincost.fpga.converting import select_accelerators, sized_ips
from traincost.fpga.devices import Device, FpgaCatalog
from traincost.fpga.ip_models import TrainingIp, clock_hz
from traincost.fpga.ip_specs import IP_NAMES, EfTrainModel, IpSpec, PublishedDesign
from traincost.fpga.study import designs, strongest_device
from traincost.fpga.training_dag import TrainingDag

__all__ = [
    "CALIBRATION_COLUMNS",
    "TARGET_COLUMNS",
    "apply_calibration",
    "calibration_table",
    "fit_clock",
    "published_gflops",
]

TARGET_COLUMNS = ("ip", "board", "metric", "value", "precision", "source")
CALIBRATION_COLUMNS = (
    "constant",
    "ip",
    "value",
    "uncalibrated",
    "target",
    "board",
    "design",
    "source",
    "achieved",
    "workload",
    "batch",
    "status",
    "chosen_uncalibrated",
    "chosen_calibrated",
    "single_uncalibrated",
    "single_calibrated",
)


def published_gflops(dag: TrainingDag, spec: IpSpec, device: Device, *, clock_mhz: float) -> float:
    """Throughput (GFLOPS) of ``spec``'s published design on ``device`` at ``clock_mhz``, in its published setting:
    its batch, and only the convolutions where its paper counts only those."""
    design = _published(spec)
    ip = TrainingIp(spec=replace(spec, clock_mhz=clock_mhz), device=device, tm=design.tm, tn=design.tn)
    ops = np.flatnonzero(dag.costs.conv) if design.ops == "conv" else np.arange(len(dag.costs.macs))
    costs = dag.costs.take(ops)
    flops = design.batch * float((2 * costs.macs + costs.elementwise).sum())
    return flops / costs.seconds(ip, design.batch) / 1e9


def fit_clock(dag: TrainingDag, spec: IpSpec, device: Device, target_gflops: float, *, steps: int = 60) -> tuple[float, float]:
    """The clock (MHz) at which ``spec``'s published design reaches ``target_gflops``, and the throughput it gives.

    Throughput only grows with the clock (compute time falls, DRAM time stays), so bisection finds it.

    Raises:
        ConfigError: the target is not a finite positive number, or beyond what any clock reaches (DRAM-bound).
    """
    if not (math.isfinite(target_gflops) and target_gflops > 0):
        raise ConfigError(f"calibration target of {spec.name}: {target_gflops!r} GFLOPS, expected a finite number > 0")
    low, high = 0.0, 100.0 * clock_hz(spec, device) / 1e6
    if published_gflops(dag, spec, device, clock_mhz=high) < target_gflops:
        raise ConfigError(f"calibration of {spec.name} on {device.name}: {target_gflops:g} GFLOPS is out of reach at any clock")
    _, high = bisect(lambda mhz: published_gflops(dag, spec, device, clock_mhz=mhz) >= target_gflops, low, high, steps=steps)
    return high, published_gflops(dag, spec, device, clock_mhz=high)


def calibration_table(
    dag: TrainingDag,
    specs: Mapping[str, IpSpec],
    catalog: FpgaCatalog,
    targets: pd.DataFrame,
    *,
    label: str,
    network: str,
    calibrate: bool,
) -> pd.DataFrame:
    """One row per IP: its fitted clock (or why none), and per cluster the IPs and designs chosen for ``dag`` (the
    zoo model ``network``) with and without the fit (``CALIBRATION_COLUMNS``).

    Raises:
        ConfigError: ``targets`` lacks a column or names an unknown IP or board, ``network`` is not the network of
            an IP's published design, or a fit is out of reach.
    """
    missing = [c for c in TARGET_COLUMNS if c not in targets.columns]
    if missing:
        raise ConfigError(f"IP calibration targets: missing columns {missing}")
    rows = []
    fitted = dict(specs)
    for _, target in targets.iterrows():
        name = str(target["ip"])
        if name not in specs:
            raise ConfigError(f"IP calibration targets: ip {name!r}, expected one of {', '.join(IP_NAMES)}")
        spec = specs[name]
        row = {"constant": "clock_mhz", "ip": name, "board": target["board"], "source": target["source"], "workload": label}
        value = pd.to_numeric(target["value"], errors="coerce")
        if not isinstance(spec.model, EfTrainModel) or pd.isna(value) or target["precision"] != "fp32":
            rows.append(
                row | {"status": f"not fitted: no FP32 throughput of its own design on its own board ({target['metric']})"}
            )
            continue
        design = spec.model.published_design
        if network != design.workload:
            raise ConfigError(
                f"IP calibration of {name}: the workload {label!r} is the model {network!r}, not its published network "
                f"{design.workload!r} (published_design.workload)"
            )
        if design.board not in catalog.devices:
            raise ConfigError(f"IP calibration: {name}'s published board {design.board!r} is not a device of the catalog")
        device = catalog.devices[design.board]
        today = clock_hz(spec, device) / 1e6
        row |= {
            "uncalibrated": today,
            "target": float(value),
            "design": f"{design.tm}x{design.tn}",
            "batch": design.batch,
            "value": today,
            "achieved": published_gflops(dag, spec, device, clock_mhz=today),
            "status": "not calibrated (calibrate: false)",
        }
        if calibrate:
            clock, achieved = fit_clock(dag, spec, device, float(value))
            row |= {"value": clock, "achieved": achieved, "status": "fitted"}
            fitted[name] = replace(spec, clock_mhz=clock)
        rows.append(row)
    table = pd.DataFrame(rows).reindex(columns=list(CALIBRATION_COLUMNS))
    for state, these in (("uncalibrated", specs), ("calibrated", fitted)):
        chosen, singles = _effects(dag, these, catalog)
        table[f"chosen_{state}"] = chosen
        table[f"single_{state}"] = [singles[name] for name in table["ip"]]
    return table


def _effects(dag: TrainingDag, specs: Mapping[str, IpSpec], catalog: FpgaCatalog) -> tuple[str, dict[str, str]]:
    """For ``dag`` at each cluster's batch, from one design search per FPGA and IP: the IP and design each FPGA gets,
    and per IP its throughput alone on the cluster's strongest FPGA (the single-FPGA baseline of Figures 9-11)."""
    chosen, singles = [], {name: [] for name in specs}
    for name, cluster in catalog.clusters.items():
        sized = sized_ips(dag, cluster, specs)
        chosen.append(f"{name}: {designs(select_accelerators(dag, cluster, specs, sized=sized))}")
        for ip_name, ip in sized[strongest_device(cluster)].items():
            gflops = dag.flops(cluster.batch) / dag.costs.seconds(ip, cluster.batch) / 1e9
            singles[ip_name].append(f"{name}: {ip.device.name}:{ip.tm}x{ip.tn} {gflops:.2f} GFLOPS")
    return "; ".join(chosen), {ip_name: "; ".join(parts) for ip_name, parts in singles.items()}


def _published(spec: IpSpec) -> PublishedDesign:
    if not isinstance(spec.model, EfTrainModel):
        raise ConfigError(f"{spec.name}: no published design in its constants")
    return spec.model.published_design


def apply_calibration(table: pd.DataFrame | None, specs: Mapping[str, IpSpec]) -> dict[str, IpSpec]:
    """``specs`` with a calibration table's fitted clocks (``None``: as they are).

    Raises:
        ConfigError: the table lacks a column, or names an unknown IP or a clock that is not a positive number.
    """
    out = dict(specs)
    if table is None:
        return out
    missing = [c for c in ("constant", "ip", "value", "status") if c not in table.columns]
    if missing:
        raise ConfigError(f"MTrain calibration table: missing columns {missing}")
    for _, row in table[(table["constant"] == "clock_mhz") & (table["status"] == "fitted")].iterrows():
        name, value = str(row["ip"]), float(row["value"])
        if name not in out or not (math.isfinite(value) and value > 0):
            raise ConfigError(
                f"MTrain calibration table: clock_mhz of {name!r} = {value!r}, expected an IP of {IP_NAMES} and a clock > 0"
            )
        out[name] = replace(out[name], clock_mhz=value)
    return out
