"""Performance and resource models of MTrain's two FP32 training IPs, and the search for each IP's design on a device.

Each IP's constants and their sources are in ``data/fpga/training_ips.yaml`` (:mod:`traincost.fpga.ip_specs`).

* **Design search** (MTrain section III-A: each FPGA "can select the design with the maximum single accelerator
  throughput"; the IPs' models "automatically find the optimal design parameters"): every array shape that fits
  the device is costed on the whole training step at the cluster's batch, vectorised over the shapes, and the
  fastest kept (fewest lanes among equals). A lane takes ``mac_dsp`` DSP slices, and the array at most
  ``dsp_share`` of the device's.
* **EF-Train** (Tm output x Tn input channels): its own analytical model, ``finetune2.py`` of its repository,
  for the convolutions of FP, BP and WU: per layer the row tile ``Tr`` (and the weight group ``M_on``) its
  model picks, double-buffered DMA transfers of ``dma_words_per_cycle`` words per cycle beside the ``Tr·Tc·K²``
  cycles of each tile. Its buffers (``source.h``) are BRAM banks: ``Tm·Tn`` weight banks, ``Tn`` input and ``Tm``
  output banks, each double-buffered, each taking whole 1K-word blocks. Where its model stops we extend it,
  our choice: a kernel over ``kernel_bound`` (ResNet-18's 7×7, AlexNet's 11×11) keeps one kernel per weight
  group where the model divides by ``floor(3 / K)``; a row tile of one row is always allowed; fully connected
  layers are 1×1 convolutions over their rows. ReLU (forward and backward) and the optimizer's update ride on
  the neighbouring passes, as its HLS code does; every other element-wise op (BN, pooling, residual adds, the
  loss) is a pass through its 128-bit stream, ``dma_words_per_cycle`` elements per cycle.
* **DarkFPGA** (Tb samples × Tm output channels; our reconstruction from its abstract): an op takes
  ``ceil(b / Tb) · macs / (Tm · u)`` cycles, ``u`` the utilisation of the Tm lanes by the output channels; its
  element-wise ops run on the whole array. Buffers: double-buffered tiles in the device's BRAM and URAM bytes.
  Its model sizes a design "with respect to a specific network specification": an FPGA given a share of the batch
  runs the design searched at that share (``share_design``; ``sized_for`` in its constants), so half the batch
  takes about half the time; searched once at the whole batch, ``Tb`` would be the batch and a share would leave
  lanes idle.
* Layout ops (transposes, slices) move no data on either IP (EF-Train's data reshaping, DarkFPGA's batch-oriented
  data pattern). Every op also moves its operands through DRAM (activations per sample, weights once per op):
  its latency is the larger of its compute and its DRAM time at the board's bandwidth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from traincost.cost.optable import OpTable
from traincost.errors import ConfigError
from traincost.fpga.devices import Device
from traincost.fpga.ip_specs import IP_NAMES, DarkFpgaModel, EfTrainModel, IpSpec

__all__ = ["TrainingIp", "IP_NAMES", "clock_hz", "size_ip", "share_design", "design_space", "OpCosts", "GEOMETRY", "WORD_BYTES"]

WORD_BYTES = 4
GEOMETRY = ("M", "N", "R", "C", "K", "S", "state", "G")
"""EF-Train's view of a MAC op (its model's layer row): output and input channels per group, output rows and columns,
kernel, stride, 1 FP / 2 BP / 3 WU, and the groups, each a convolution of its model (depthwise: M = N = 1, G
channels); zeros for other ops."""
_MAX_CHANNEL_LANES = 64  # EF-Train shapes searched: Tm, Tn <= 64 (our bound; its model keeps both near 16-24)
_CHUNK_ELEMENTS = 2_000_000  # shapes x ops x row tiles per vectorised block of the search
_FIRST_DESIGNS = 32  # the widest designs costed before the rest are bounded


@dataclass(frozen=True, slots=True)
class TrainingIp:
    """One IP instance on one device: its array (``tm`` × ``tn``) and its constants."""

    spec: IpSpec
    device: Device
    tm: int  # output-channel lanes
    tn: int  # input-channel lanes (EF-Train) or batch lanes (DarkFPGA)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def clock_hz(self) -> float:
        return clock_hz(self.spec, self.device)

    @property
    def peak_flops(self) -> float:
        return 2.0 * self.tm * self.tn * self.clock_hz


def clock_hz(spec: IpSpec, device: Device) -> float:
    """The IP's clock on ``device``: its own where its sources state one, else the device's."""
    return (spec.clock_mhz or device.clock_mhz) * 1e6


def design_space(spec: IpSpec, device: Device, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """The (tm, tn) of ``spec`` worth costing on ``device``: EF-Train's every shape its DSPs and BRAM allow;
    DarkFPGA's largest ``tm`` for each ``tn`` (more output-channel lanes are never slower in its model). Empty
    when not even 1 × 1 fits."""
    lanes = int(spec.dsp_share * device.dsp // spec.mac_dsp)
    if isinstance(spec.model, EfTrainModel):
        tn = np.arange(1, min(lanes, _MAX_CHANNEL_LANES) + 1)
        m = spec.model
        per_tn = 2 * _blocks(m.input_tile_pixels, m.bram36_words)  # double-buffered input banks
        per_pair = 2 * _blocks(m.weight_bank_words, m.bram36_words)
        per_tm = 2 * _blocks(m.row_tile_pixels, m.bram36_words)
        free = device.bram_36kb - m.fixed_bram36 - per_tn * tn
        most = np.minimum(np.minimum(lanes // tn, _MAX_CHANNEL_LANES), np.maximum(free, 0) // (per_pair * tn + per_tm))
        tn, tm = np.repeat(tn, np.maximum(most, 0)), np.concatenate([np.arange(1, k + 1) for k in np.maximum(most, 0)] or [[]])
    else:
        tn = np.arange(1, min(lanes, batch, spec.model.max_batch_lanes or batch) + 1)  # beyond the batch never fills
        m = spec.model
        word_pairs = 2 * WORD_BYTES  # double-buffered FP32
        free = device.onchip_bytes / word_pairs - tn * m.tile_pixels
        tm = np.minimum(lanes // tn, np.floor(np.maximum(free, 0) / (tn * m.kernel_taps + m.tile_pixels)).astype(int))
    keep = tm >= 1
    return tm[keep].astype(np.int64), tn[keep].astype(np.int64)


def _blocks(words: int, block_words: int) -> int:
    return -(-words // block_words)


def size_ip(spec: IpSpec, device: Device, costs: OpCosts, batch: int) -> TrainingIp:
    """The design of ``spec`` on ``device`` that runs ``costs`` (a whole training step) fastest at ``batch``.

    Raises:
        ConfigError: the device is too small for even a 1 × 1 array.
    """
    tm, tn = design_space(spec, device, batch)
    if not len(tm):
        raise ConfigError(f"device {device.name}: too small for a {spec.name} instance ({device.dsp} DSPs)")
    order = np.argsort(-(tm * tn), kind="stable")  # the widest first: their best bounds the rest
    tm, tn = tm[order], tn[order]
    seconds = np.full(len(tm), np.inf)
    seconds[:_FIRST_DESIGNS] = costs.seconds_of_designs(spec, device, tm[:_FIRST_DESIGNS], tn[:_FIRST_DESIGNS], batch)
    # no design computes faster than its MACs over its lanes, one MAC per lane per cycle
    floor_s = batch * costs.macs.sum() / (tm * tn) / clock_hz(spec, device)
    rest = _FIRST_DESIGNS + np.flatnonzero(floor_s[_FIRST_DESIGNS:] < seconds.min())
    seconds[rest] = costs.seconds_of_designs(spec, device, tm[rest], tn[rest], batch)
    best = np.flatnonzero(seconds <= seconds.min() * (1 + 1e-12))
    pick = best[np.argmin(tm[best] * tn[best])]
    return TrainingIp(spec=spec, device=device, tm=int(tm[pick]), tn=int(tn[pick]))


def share_design(ip: TrainingIp, costs: OpCosts, share: int) -> TrainingIp:
    """The design ``ip``'s FPGA runs when it is given ``share`` samples of the batch (``ip``: its design at the whole
    batch, ``costs``: the whole training step). DarkFPGA's (``sized_for: share``) is searched at the share, as its
    model sizes a design for the work it is given; EF-Train's channel lanes do not depend on the batch, and a design
    sized for the batch (``sized_for: batch``) or an FPGA given no share keeps ``ip``."""
    model = ip.spec.model
    if share < 1 or not isinstance(model, DarkFpgaModel) or model.sized_for == "batch":
        return ip
    return size_ip(ip.spec, ip.device, costs, share)


@dataclass(frozen=True, slots=True)
class OpCosts:
    """Per-op facts of one training sample that the IP models read (from an OpTable of a batch-1 step)."""

    macs: np.ndarray
    elementwise: np.ndarray
    n: np.ndarray  # output channels of the GEMM view
    r: np.ndarray  # reduction of the GEMM view
    sample_bytes: np.ndarray  # activation-like bytes the op reads and writes per sample
    fixed_bytes: np.ndarray  # parameter-like bytes, once per op whatever the batch
    geometry: np.ndarray  # (ops, len(GEOMETRY)): EF-Train's layer row of each MAC op
    layout: np.ndarray  # bool: a layout op (transpose, slice, ...)
    activation: np.ndarray  # bool: an op of a ReLU layer (forward or gradient)
    update: np.ndarray  # bool: an optimizer op
    conv: np.ndarray  # bool: a convolution (forward, data or weight gradient)

    @classmethod
    def from_table(cls, table: OpTable, *, per_sample: np.ndarray, stride: np.ndarray, activation: np.ndarray) -> OpCosts:
        """``per_sample``: per tensor id, true if its size grows with the batch; ``stride``: per op, its
        convolution stride; ``activation``: per op, whether it belongs to a ReLU layer."""
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
            geometry=_geometry(table, stride),
            layout=table.kind == "layout",
            activation=np.asarray(activation, dtype=bool) & ~mac,
            update=table.phase == "optimizer",
            conv=np.isin(table.kind, ("conv", "conv_dgrad", "conv_wgrad")),
        )

    def take(self, index: np.ndarray) -> OpCosts:
        return OpCosts(**{f: getattr(self, f)[index] for f in self.__dataclass_fields__})

    def shard(self, fraction: float) -> OpCosts:
        """These ops with their output channels split (tensor parallelism): ``fraction`` of the MACs,
        element-wise work, output channels and weights; each accelerator still reads whole inputs."""
        geometry = self.geometry.copy()  # a grouped op's output channels are its groups
        split = np.where(geometry[:, 7] > 1, 7, 0)
        rows = np.arange(len(geometry))
        geometry[rows, split] = np.where(
            geometry[rows, split] > 0, np.maximum(1.0, np.ceil(geometry[rows, split] * fraction)), 0.0
        )
        return replace(
            self,
            macs=self.macs * fraction,
            elementwise=self.elementwise * fraction,
            n=np.maximum(1.0, np.ceil(self.n * fraction)),
            fixed_bytes=self.fixed_bytes * fraction,
            geometry=geometry,
        )

    def seconds(self, ip: TrainingIp, batch: float) -> float:
        """Latency of running all these ops, one after the other, at batch share ``batch`` on ``ip``."""
        if batch <= 0:
            return 0.0
        return float(self.seconds_of_designs(ip.spec, ip.device, np.array([ip.tm]), np.array([ip.tn]), batch)[0])

    def seconds_of_designs(self, spec: IpSpec, device: Device, tm: np.ndarray, tn: np.ndarray, batch: float) -> np.ndarray:
        """Per design (``tm[i]`` × ``tn[i]``), the latency of these ops one after the other at batch share ``batch``."""
        keep = ~self._free(spec)
        ops = self.take(np.flatnonzero(keep)) if not keep.all() else self
        out = np.empty(len(tm))
        step = max(1, _CHUNK_ELEMENTS // max(1, len(ops.macs) * _row_tiles(ops.geometry, spec.model)))
        for start in range(0, len(tm), step):
            tm_c = tm[start : start + step, None].astype(np.float64)
            tn_c = tn[start : start + step, None].astype(np.float64)
            out[start : start + step] = ops._op_seconds(spec, device, tm_c, tn_c, batch).sum(axis=1)
        return out

    def seconds_per_part(self, ip: TrainingIp, batch: float, parts: Sequence[np.ndarray]) -> np.ndarray:
        """Per part (an array of positions in these ops, such as a DAG node's ops), ``self.take(part).seconds(ip,
        batch)``: every op's latency is computed at once, and each part's ops that ``ip`` does not run for free are
        summed in their order, as ``seconds`` sums them, so each part's sum is the same number."""
        if batch <= 0:
            return np.zeros(len(parts))
        runs = ~self._free(ip.spec)
        latency = self._op_seconds(ip.spec, ip.device, np.array([[float(ip.tm)]]), np.array([[float(ip.tn)]]), batch)[0]
        return np.array([latency[part[runs[part]]].sum() for part in parts])

    def _free(self, spec: IpSpec) -> np.ndarray:
        """The ops ``spec`` runs at no cost: layout ops, and the ReLUs and updates it fuses into their neighbours."""
        return (self.layout & spec.free_layout) | (self.activation & spec.fuses_activation) | (self.update & spec.fuses_update)

    def _op_seconds(self, spec: IpSpec, device: Device, tm: np.ndarray, tn: np.ndarray, batch: float) -> np.ndarray:
        """(designs, ops): each op's latency at ``batch``, its compute or its DRAM traffic, whichever is longer
        (``tm``, ``tn``: columns of designs)."""
        dram_s = (batch * self.sample_bytes + self.fixed_bytes) / (device.dram_bandwidth_gb_per_s * 1e9 * spec.dram_efficiency)
        return np.maximum(self._cycles(spec, tm, tn, batch) / clock_hz(spec, device), dram_s[None, :])

    def _cycles(self, spec: IpSpec, tm: np.ndarray, tn: np.ndarray, batch: float) -> np.ndarray:
        """(designs, ops): compute cycles at ``batch`` (``tm``, ``tn``: columns of designs)."""
        mac = self.macs > 0
        if isinstance(spec.model, EfTrainModel):
            cycles = np.zeros((tm.shape[0], len(self.macs)))
            if mac.any():
                cycles[:, mac] = ef_train_cycles(self.geometry[mac], tm, tn, batch, spec.model)
            return cycles + batch * self.elementwise / spec.model.dma_words_per_cycle
        assert isinstance(spec.model, DarkFpgaModel)
        n = np.maximum(self.n, 1.0)
        rounds = np.ceil(batch / tn)
        return rounds * (self.macs / n * np.ceil(n / tm) + self.elementwise / tm)


def _geometry(table: OpTable, stride: np.ndarray) -> np.ndarray:
    """EF-Train's layer row (``GEOMETRY``) of each MAC op: a conv gradient carries its forward conv's loop nest; the
    data gradient convolves the output grid's losses at stride 1; a GEMM is a 1×1 conv over its rows."""
    d = table.dims
    out = np.zeros((len(table), len(GEOMETRY)))
    kernel = np.maximum(d["FY"], d["FX"]).astype(np.float64)
    rows = (
        ("conv", d["K"], d["C"], d["OY"], d["OX"], kernel, stride, 1, d["G"]),
        ("conv_dgrad", d["C"], d["K"], d["OY"], d["OX"], kernel, np.ones(len(table)), 2, d["G"]),
        ("conv_wgrad", d["K"], d["C"], d["OY"], d["OX"], kernel, stride, 3, d["G"]),
    )
    for kind, *columns in rows:
        at = table.kind == kind
        out[at] = np.column_stack([np.broadcast_to(np.asarray(c, dtype=np.float64), len(table))[at] for c in columns])
    gemm = np.isin(table.kind, ("gemm", "matmul"))
    ones = np.ones(int(gemm.sum()))
    out[gemm] = np.column_stack([table.n[gemm], table.r[gemm], table.m[gemm], ones, ones, ones, ones, table.groups[gemm]])
    return out


def _row_tiles(geometry: np.ndarray, model: EfTrainModel | DarkFpgaModel) -> int:
    """The row tiles worth trying: up to the tallest tile EF-Train's buffers allow any op (at least 1)."""
    if not isinstance(model, EfTrainModel) or not len(geometry):
        return 1
    return int(_tallest_tiles(geometry, model).max(initial=1.0))


def _tallest_tiles(geometry: np.ndarray, m: EfTrainModel) -> np.ndarray:
    """Per op, the most output rows ``Tr`` whose tile fits EF-Train's output and input buffers (at least one row)."""
    rows, cols, kernel, stride = geometry[:, 2], geometry[:, 3], geometry[:, 4], geometry[:, 5]
    by_output = np.floor(m.row_tile_pixels / np.maximum(cols, 1))
    by_input = (
        np.floor((np.floor(m.input_tile_pixels / np.maximum((cols - 1) * stride + kernel, 1)) - kernel) / np.maximum(stride, 1))
        + 1
    )
    return np.maximum(1.0, np.minimum(rows, np.minimum(by_output, by_input)))


def ef_train_cycles(geometry: np.ndarray, tm: np.ndarray, tn: np.ndarray, batch: float, m: EfTrainModel) -> np.ndarray:
    """EF-Train's model (``finetune2.py``'s ``latency`` and its row-tile search) for MAC ops ``geometry`` at ``batch``:
    (designs, ops) cycles, each op at the row tile ``Tr`` (and weight group ``M_on``) that minimises it. ``tm`` and
    ``tn`` are columns of designs. Ops are costed in sets of one state and one tallest tile; a grouped op runs its
    model's convolution once per group."""
    out = np.empty((tm.shape[0], len(geometry)))
    tallest = _tallest_tiles(geometry, m)
    for state, rows in {(int(st), int(t)) for st, t in zip(geometry[:, 6], tallest, strict=True)}:
        at = np.flatnonzero((geometry[:, 6] == state) & (tallest == rows))
        cycles = _ef_train_group(geometry[at], tm[:, :, None], tn[:, :, None], batch, m, state=state, tallest=rows)
        out[:, at] = cycles * geometry[at, 7]
    return out


def _ef_train_group(
    geometry: np.ndarray, tm: np.ndarray, tn: np.ndarray, batch: float, m: EfTrainModel, *, state: int, tallest: int
) -> np.ndarray:
    """(designs, ops) cycles of ops that share ``state`` (1 FP, 2 BP, 3 WU) and row tiles 1..``tallest``."""
    big_m, big_n, rows, cols, kernel, stride = (geometry[None, :, j, None] for j in range(6))
    w, t0 = float(m.dma_words_per_cycle), float(m.dma_start_cycles)
    tr = np.arange(1, tallest + 1, dtype=np.float64)[None, None, :]
    tc, tc_in, tr_in = cols, (cols - 1) * stride + kernel, (tr - 1) * stride + kernel
    ceil = np.ceil
    t_ifm = t0 + np.where(big_n <= w, ceil(big_n / w), ceil(tn / w)) * tr_in * tc_in
    t_comp = tr * tc * kernel * kernel
    n_tiles, r_tiles = ceil(big_n / tn), ceil(rows / tr)
    # the weight group M_on: the largest multiple of Tm below M (or M itself) within the weight buffer
    taps = np.maximum(1.0, np.floor(m.kernel_bound / kernel)) ** 2
    bound = np.floor(m.weight_tiles / ceil(ceil(big_n / (2 * tn)) / taps)) * tm
    j_max = np.floor(big_m / tm) - 1
    m_on = np.where(
        big_m <= bound, big_m, np.where(j_max >= 1, tm * np.clip(np.minimum(np.floor(bound / tm), j_max), 1, None), big_m)
    )
    m_on1 = np.where(m_on == big_m, big_m, np.where(big_m % m_on == 0, m_on, big_m % m_on))
    repeats = ceil(big_m / m_on) - 1
    if state == 3:
        w_out = ceil(tm * tn / w) * kernel * kernel
        t_load = np.maximum(t_ifm, ceil(tm / w) * tr * tc + t0)
        p1_w, p2_w, store_w = np.maximum(t_load, t_comp), np.maximum(t_ifm, t_comp), np.maximum(t_comp, w_out)

        def update_group(mx: np.ndarray) -> np.ndarray:  # one weight group: row-tiled, or whole maps
            groups = ceil(mx / tm)
            tiled = ((batch - 1) * groups * n_tiles + 1) * ((r_tiles - 1) * p1_w + t_load + t_comp)
            tiled += (groups * n_tiles - 1) * ((r_tiles - 1) * p1_w + t_load + store_w) + w_out
            lat1 = (n_tiles - 1) * p2_w + t_load + t_comp
            latb1 = (n_tiles - 1) * (p2_w + w_out) + t_load + t_comp + w_out
            return np.where(tr < rows, tiled, groups * ((batch - 1) * lat1 + latb1))

        return (repeats * update_group(m_on) + update_group(m_on1)).min(axis=2)
    t_out = ceil(tm / w) * tr * tc
    p1, t_store = np.maximum(t_ifm, t_comp), np.maximum(t_comp, t_out)
    lat1 = (n_tiles - 1) * p1 + t_ifm + t_comp
    lat2 = (n_tiles - 1) * p1 + t_ifm + t_store

    def group(mx: np.ndarray) -> np.ndarray:  # one weight group over the batch
        groups = ceil(mx / tm)
        lat3 = (groups * r_tiles - 1) * lat2 + lat1 + t_out + t0
        if state == 1:
            p2 = np.maximum(np.maximum(t_ifm, ceil(tm * tn / w) * kernel * kernel), t_comp)
            latb1, latb2 = (n_tiles - 1) * p2 + t_ifm + t_comp, (n_tiles - 1) * p2 + t_ifm + t_store
            latb3 = groups * (r_tiles - 1) * lat2 + (groups - 1) * latb2 + latb1 + t_out + t0
        else:
            p2 = np.maximum(np.maximum(t_ifm, ceil(mx * tn / w) * kernel * kernel + t0), t_comp)
            latb3 = (groups * r_tiles - 1) * lat2 + (n_tiles - 1) * p2 + t_ifm + t_comp + t_out + t0
        return (batch - 1) * lat3 + latb3

    return (repeats * group(m_on) + group(m_on1)).min(axis=2)
