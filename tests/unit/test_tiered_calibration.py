"""The TM-Training calibration: the accelerator energy scale that gives HBM-only the paper's off-chip share."""

from __future__ import annotations

import pandas as pd
import pytest

from traincost.errors import ConfigError
from traincost.tiered.calibration import fit_accelerator_energy_scale, offchip_share


def test_accelerator_energy_scale_solved_by_hand() -> None:
    # shares 1 / (1 + 3k) and 1 / (1 + k): mean 0.375 at k = 1, 0.625 at k = 1/3
    parts = pd.DataFrame({"offchip_j": [1.0, 1.0], "dynamic_j": [3.0, 1.0], "accelerator_static_j": [0.0, 0.0]})
    assert offchip_share(parts, [1.0, 1 / 3]) == pytest.approx([0.375, 0.625])
    assert fit_accelerator_energy_scale(parts, 0.375) == pytest.approx(1.0, rel=1e-9)
    assert fit_accelerator_energy_scale(parts, 0.625) == pytest.approx(1 / 3, rel=1e-9)
    with pytest.raises(ConfigError, match="out of reach"):  # static energy alone keeps the share below 0.5
        fit_accelerator_energy_scale(parts.assign(accelerator_static_j=1.0), 0.6)
