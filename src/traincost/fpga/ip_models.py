"""Performance and resource models of the two FP32 training IPs MTrain deploys: EF-Train and DarkFPGA.

Both are reconstructed from their published designs at the level MTrain needs: for a device, the
largest instance that fits its resources, and for any training op the latency at a batch share.

* **Resources.** An FP32 multiply-accumulate lane uses ``FP32_MAC_DSP`` = 5 DSP slices (the Xilinx
  Floating-Point operator's full-DSP FP32 multiplier takes 3 and its adder 2); ``DSP_SHARE`` = 80 %
  of a device's DSPs go to the MAC array, the rest to the BN / pooling / update units and control
  (our choice, per IP; ``traincost mtrain-calibrate`` fits it to the throughput an IP's own paper
  reports on its own board, and the MTrain commands' ``--calibration`` puts the fitted share here).
  On-chip buffers (input, weight and output tiles, double-buffered) must fit the device's BRAM and
  URAM; the array shrinks until they do.
* **EF-Train** (Tang et al., TODAES 2022) unrolls ``Tm`` output channels × ``Tn`` input channels
  (the reduction dimension) and runs the batch, rows and columns as outer loops; with data reshaping
  its backward and weight-update passes reuse the same array. An op of ``macs`` MACs per sample at
  batch share ``b`` takes ``b · macs / (Tm · Tn · u)`` cycles, ``u`` the array utilisation from the
  ceil of the output channels over ``Tm`` and the reduction over ``Tn``.
* **DarkFPGA** (Luo et al., JoS 2020) exploits batch-level parallelism: ``Tb`` = 8 samples × ``Tm``
  output channels, each lane reducing sequentially. An op takes ``ceil(b / Tb) · macs / (Tm · u)``
  cycles: a batch share below ``Tb`` leaves lanes idle.
* Element-wise, pooling, normalisation and optimizer ops stream through ``Tm`` vector lanes.
* Every op also moves its operands through DRAM (activations per sample, weights once per op) at
  ``DRAM_EFFICIENCY`` (1: the board's whole bandwidth) of the board's DRAM bandwidth; with double
  buffering its latency is the larger of compute and DRAM time.

``FP32_MAC_DSP`` and ``DRAM_EFFICIENCY`` are our choices, not fitted; ``set_ip_constants`` changes them for
one run (``--assume fp32_mac_dsp=…`` / ``ip_dram_efficiency=…`` of the MTrain commands, an ablation). An
IP instance carries its DRAM efficiency, so worker processes see the run's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from traincost.cost.optable import OpTable
from traincost.errors import ConfigError
from traincost.fpga.devices import Device

__all__ = ["TrainingIp", "IP_NAMES", "size_ip", "set_ip_constants", "OpCosts"]

IpName = Literal["EF-Train", "DarkFPGA"]
IP_NAMES: tuple[IpName, ...] = ("EF-Train", "DarkFPGA")
FP32_MAC_DSP = 5
DRAM_EFFICIENCY = 1.0
"""The share of a board's DRAM bandwidth an IP's transfers achieve."""
DSP_SHARE: dict[str, float] = {"EF-Train": 0.8, "DarkFPGA": 0.8}
"""Per IP, the share of a device's DSPs its MAC array gets."""
WORD_BYTES = 4
DARKFPGA_BATCH_LANES = 8
_TILE_PIXELS = 28 * 28  # an output tile of the on-chip buffers (rows x columns)
_KERNEL = 9  # 3 x 3 weights per lane pair in the weight buffer


@dataclass(frozen=True, slots=True)
class TrainingIp:
    """One IP instance on one device: its array and clock."""

    name: IpName
    device: Device
    tm: int  # output-channel lanes
    tn: int  # reduction lanes (EF-Train) or batch lanes (DarkFPGA)
    dram_efficiency: float = 1.0  # share of the device's DRAM bandwidth its transfers achieve

    @property
    def peak_flops(self) -> float:
        return 2.0 * self.tm * self.tn * self.device.clock_mhz * 1e6

    def buffer_bytes(self) -> float:
        """Double-buffered input, weight and output tiles."""
        tiles = self.tn * _TILE_PIXELS + self.tm * self.tn * _KERNEL + self.tm * _TILE_PIXELS
        return 2.0 * tiles * WORD_BYTES


def size_ip(name: IpName, device: Device) -> TrainingIp:
    """The largest instance of IP ``name`` whose MAC array fits the device's DSPs and buffers its on-chip RAM.

    Raises:
        ConfigError: an unknown IP, or a device too small for even a 1 x 1 array.
    """
    lanes = int(DSP_SHARE.get(name, 0.0) * device.dsp // FP32_MAC_DSP)
    if name == "EF-Train":
        shapes = [(lanes // tn, tn) for tn in (64, 32, 16, 8, 4, 2, 1) if lanes // tn >= 1]
        shapes.sort(key=lambda s: (-s[0] * s[1], abs(s[0] - s[1])))  # most lanes, then the squarest
    elif name == "DarkFPGA":
        shapes = [(tm, DARKFPGA_BATCH_LANES) for tm in range(lanes // DARKFPGA_BATCH_LANES, 0, -1)]
    else:
        raise ConfigError(f"training IP {name!r}: expected one of {IP_NAMES}")
    for tm, tn in shapes:
        ip = TrainingIp(name=name, device=device, tm=tm, tn=tn, dram_efficiency=DRAM_EFFICIENCY)
        if ip.buffer_bytes() <= device.onchip_bytes:
            return ip
    raise ConfigError(f"device {device.name}: too small for a {name} instance ({device.dsp} DSPs)")


def set_ip_constants(*, fp32_mac_dsp: int, dram_efficiency: float) -> None:
    """Set :data:`FP32_MAC_DSP` and :data:`DRAM_EFFICIENCY` for the IPs sized from now on in this process.

    Raises:
        ConfigError: fewer than 1 DSP per lane, or an efficiency outside (0, 1].
    """
    global FP32_MAC_DSP, DRAM_EFFICIENCY  # noqa: PLW0603 (one run's IP constants, as DSP_SHARE's calibration)
    if fp32_mac_dsp < 1:
        raise ConfigError(f"fp32_mac_dsp: {fp32_mac_dsp} DSP slices per FP32 MAC lane, expected at least 1")
    if not 0 < dram_efficiency <= 1:
        raise ConfigError(f"ip_dram_efficiency: {dram_efficiency}, expected a share in (0, 1]")
    FP32_MAC_DSP, DRAM_EFFICIENCY = fp32_mac_dsp, dram_efficiency


@dataclass(frozen=True, slots=True)
class OpCosts:
    """Per-op facts of one training sample that the IP models read (from an OpTable of a batch-1 step)."""

    macs: np.ndarray
    elementwise: np.ndarray
    n: np.ndarray  # output channels of the GEMM view
    r: np.ndarray  # reduction of the GEMM view
    sample_bytes: np.ndarray  # activation-like bytes the op reads and writes per sample
    fixed_bytes: np.ndarray  # parameter-like bytes, once per op whatever the batch

    @classmethod
    def from_table(cls, table: OpTable, *, per_sample: np.ndarray) -> OpCosts:
        """``per_sample``: per tensor id, true if its size grows with the batch."""
        sample, fixed = np.zeros(len(table)), np.zeros(len(table))
        for i, (ins, outs) in enumerate(zip(table.inputs, table.outputs, strict=True)):
            for t in (*ins, *outs):
                if per_sample[t]:
                    sample[i] += table.tensor_elems[t] * WORD_BYTES
                else:
                    fixed[i] += table.tensor_elems[t] * WORD_BYTES
        mac = table.is_mac
        return cls(
            macs=np.where(mac, table.macs, 0.0),
            elementwise=np.where(mac, 0.0, np.maximum(table.elementwise_ops, table.o_elems)),
            n=table.n.astype(np.float64),
            r=table.r.astype(np.float64),
            sample_bytes=sample,
            fixed_bytes=fixed,
        )

    def take(self, index: np.ndarray) -> OpCosts:
        return OpCosts(**{f: getattr(self, f)[index] for f in self.__dataclass_fields__})

    def shard(self, fraction: float) -> OpCosts:
        """These ops with their output channels split (tensor parallelism): ``fraction`` of the MACs,
        element-wise work, output channels and weights; each accelerator still reads whole inputs."""
        return OpCosts(
            macs=self.macs * fraction,
            elementwise=self.elementwise * fraction,
            n=np.maximum(1.0, np.ceil(self.n * fraction)),
            r=self.r,
            sample_bytes=self.sample_bytes,
            fixed_bytes=self.fixed_bytes * fraction,
        )

    def seconds(self, ip: TrainingIp, batch: float) -> float:
        """Latency of running all these ops, one after the other, at batch share ``batch`` on ``ip``."""
        if batch <= 0:
            return 0.0
        util_n = self.n / (np.ceil(self.n / ip.tm) * ip.tm)
        if ip.name == "EF-Train":
            util_r = self.r / (np.ceil(self.r / ip.tn) * ip.tn)
            mac_cycles = batch * self.macs / (ip.tm * ip.tn * util_n * util_r)
        else:
            mac_cycles = np.ceil(batch / ip.tn) * self.macs / (ip.tm * util_n)
        cycles = mac_cycles + batch * self.elementwise / ip.tm
        compute_s = cycles / (ip.device.clock_mhz * 1e6)
        dram_bytes_per_s = ip.device.dram_bandwidth_gb_per_s * 1e9 * ip.dram_efficiency
        dram_s = (batch * self.sample_bytes + self.fixed_bytes) / dram_bytes_per_s
        return float(np.maximum(compute_s, dram_s).sum())
