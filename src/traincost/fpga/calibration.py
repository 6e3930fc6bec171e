"""MTrain calibration: each training IP's DSP share fitted to the throughput its own paper reports on its own board.

MTrain's IPs (EF-Train, DarkFPGA) are reconstructed from their papers (:mod:`traincost.fpga.ip_models`); how many
of a device's DSPs the reconstruction gives the MAC array (``DSP_SHARE``) is our choice. Where an IP's own paper
reports its FP32 training throughput on its own board, the share is fitted (by bisection) so that the IP alone,
on that board, trains the calibration workload at that throughput. Never fitted to MTrain's own results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from traincost.errors import ConfigError
from traincost.fpga import ip_models
from traincost.fpga.converting import single_device
from traincost.fpga.devices import Device
from traincost.fpga.ip_models import IP_NAMES, size_ip
from traincost.fpga.training_dag import TrainingDag

__all__ = ["CALIBRATION_COLUMNS", "TARGET_COLUMNS", "apply_dsp_shares", "fit_dsp_share", "single_ip_gflops"]

TARGET_COLUMNS = ("ip", "board", "metric", "value", "precision", "source")
CALIBRATION_COLUMNS = (
    "constant",
    "ip",
    "value",
    "uncalibrated",
    "target",
    "board",
    "source",
    "achieved",
    "workload",
    "batch",
    "status",
)


def single_ip_gflops(dag: TrainingDag, name: str, device: Device, batch: int, *, dsp_share: float) -> float:
    """Training throughput (GFLOPS) of IP ``name`` alone on ``device`` at ``batch``, its MAC array given ``dsp_share``."""
    saved = ip_models.DSP_SHARE[name]
    ip_models.DSP_SHARE[name] = dsp_share
    try:
        ip = size_ip(name, device)
    finally:
        ip_models.DSP_SHARE[name] = saved
    mapping = single_device(dag, (ip,), batch, 0)
    return dag.flops(batch) / mapping.schedule.latency_s / 1e9


def fit_dsp_share(
    dag: TrainingDag, name: str, device: Device, batch: int, target_gflops: float, *, steps: int = 20
) -> tuple[float, float]:
    """The DSP share (0-1] at which IP ``name`` on ``device`` reaches ``target_gflops``, and the throughput it gives.

    Throughput grows with the share in steps (whole lanes), so the share returned is the smallest that reaches
    the target, to ``1 / 2**steps``.

    Raises:
        ConfigError: the target is not a finite positive number, or not reached even with every DSP.
    """
    if not (math.isfinite(target_gflops) and target_gflops > 0):
        raise ConfigError(f"calibration target of {name}: {target_gflops!r} GFLOPS, expected a finite number > 0")
    most = single_ip_gflops(dag, name, device, batch, dsp_share=1.0)
    if most < target_gflops:
        raise ConfigError(
            f"calibration of {name} on {device.name}: {target_gflops:g} GFLOPS is out of reach "
            f"(every DSP in the MAC array gives {most:.1f})"
        )
    low, high = 0.0, 1.0
    for _ in range(steps):
        mid = (low + high) / 2
        try:
            reached = single_ip_gflops(dag, name, device, batch, dsp_share=mid) >= target_gflops
        except ConfigError:  # too few DSPs for a 1 x 1 array
            reached = False
        low, high = (low, mid) if reached else (mid, high)
    return high, single_ip_gflops(dag, name, device, batch, dsp_share=high)


def apply_dsp_shares(table: pd.DataFrame | None) -> Mapping[str, float]:
    """Put a calibration table's fitted DSP shares into :data:`traincost.fpga.ip_models.DSP_SHARE`; return them.

    ``None`` (no calibration) changes nothing.

    Raises:
        ConfigError: the table lacks a column, or names an unknown IP or a share outside (0, 1].
    """
    if table is None:
        return {}
    missing = [c for c in ("constant", "ip", "value") if c not in table.columns]
    if missing:
        raise ConfigError(f"MTrain calibration table: missing columns {missing}")
    shares = {}
    for _, row in table[table["constant"] == "dsp_share"].iterrows():
        name, value = str(row["ip"]), float(row["value"])
        if name not in IP_NAMES or not 0 < value <= 1:
            raise ConfigError(
                f"MTrain calibration table: dsp_share of {name!r} = {value!r}, expected an IP of {IP_NAMES} and 0 < share <= 1"
            )
        shares[name] = value
    ip_models.DSP_SHARE.update(shares)
    return shares
