"""The system a TM-Training study runs on under the modelling assumptions an ablation changes (``--assume``).

The assumptions' names, baselines and variants are ``analysis.ablations.ASSUMPTIONS["tiered"]``, checked where
``--assume`` is parsed; here is what each value does to the system. ``calibrated`` says whether the accelerator runs
at the energy scale ``tiered.calibration`` fitted (``true``, the baseline) or at the hardware file's energies; every
other assumption sets a switch of ``TieredSystem`` (``tier2_energy_factor`` multiplies Tier 2's energy per byte). An
assumption not named leaves the system as it is: a system as loaded holds every baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from traincost.errors import ConfigError
from traincost.tiered.system import TieredSystem

__all__ = ["assumed_system", "calibrated", "study_system"]

# the switches of TieredSystem that take true or false, and those that take a name (TieredSystem checks the name)
_FLAGS = ("stall_static_power", "deeptm_eviction_costs_time", "split_only_if_evicted", "hot_promotion", "autotm_lookahead")
_NAMED = ("split_ratio_reading", "split_energy", "tier2_read_energy")
_FACTOR = "tier2_energy_factor"


def study_system(system: TieredSystem, assumed: Mapping[str, str], *, accelerator_energy_scale: float = 1.0) -> TieredSystem:
    """The system a study runs on under ``assumed``: ``system`` at ``accelerator_energy_scale`` (the calibration's)
    unless ``calibrated=false``, with the other assumptions applied (:func:`assumed_system`).

    Raises:
        ConfigError: an assumption that is not the tiered study's, a value it does not take, or a scale that is not a
            finite number > 0.
    """
    scaled = system.with_accelerator_energy_scale(accelerator_energy_scale) if calibrated(assumed) else system
    return assumed_system(scaled, {name: value for name, value in assumed.items() if name != "calibrated"})


def calibrated(assumed: Mapping[str, str]) -> bool:
    """Whether a study under ``assumed`` runs at the fitted accelerator energy scale (unless ``calibrated=false``).

    Raises:
        ConfigError: ``calibrated`` other than true or false.
    """
    return _flag("calibrated", assumed.get("calibrated", "true"))


def assumed_system(system: TieredSystem, assumed: Mapping[str, str]) -> TieredSystem:
    """``system`` with the switches ``assumed`` names set (``--assume NAME=VALUE``, as ``parse_assume`` reads them).

    Raises:
        ConfigError: a name that is not a switch of the system (``calibrated`` is :func:`study_system`'s), or a value
            it does not take.
    """
    switches: dict[str, object] = {}
    for name, value in assumed.items():
        if name in _FLAGS:
            switches[name] = _flag(name, value)
        elif name in _NAMED:
            switches[name] = value
        elif name != _FACTOR:
            known = ", ".join((*_FLAGS, *_NAMED, _FACTOR))
            raise ConfigError(f"tiered assumption {name!r}: not a switch of the system (expected one of {known})")
    if _FACTOR in assumed:
        system = system.with_tier2_energy(_number(_FACTOR, assumed[_FACTOR]))
    return replace(system, **switches)


def _flag(name: str, value: str) -> bool:
    if value not in ("true", "false"):
        raise ConfigError(f"tiered assumption {name}={value!r}: expected true or false")
    return value == "true"


def _number(name: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"tiered assumption {name}={value!r}: expected a number") from None
