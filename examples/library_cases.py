"""Networks of other libraries and classes as ``traincost cost`` takes them, with no wrapper: the Hugging Face section
of docs/models.md (its commands parsed from the page), recurrent nets (the factory ``examples.library_cases:recurrent``,
with the repository's root on ``PYTHONPATH``), segmentation, optical flow and video networks. Nothing here imports the
ONNX front end: it runs on every Python the tests do."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import torch
from torch import nn

__all__ = ["HUGGING_FACE_SECTION", "RECURRENT", "library_cases", "library_cost_commands", "recurrent"]

_MODELS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "models.md"
HUGGING_FACE_SECTION = "## Cost a Hugging Face model"


def library_cost_commands() -> list[list[str]]:
    """The ``traincost cost`` commands of docs/models.md's Hugging Face section, each as its arguments after
    ``traincost``."""
    text = _MODELS_PAGE.read_text()
    block = re.search(r"```bash\n(.*?)```", text[text.index(HUGGING_FACE_SECTION) :], re.S)
    if block is None:
        raise ValueError(f"docs/models.md: no bash block under {HUGGING_FACE_SECTION!r}")
    lines = [line.strip() for line in block.group(1).replace("\\\n", " ").splitlines()]
    return [shlex.split(line)[1:] for line in lines if line and not line.startswith("#")]


class _Recurrent(nn.Module):
    """Token ids → embedding → an LSTM, GRU or RNN (batch first) → a classifier on the last step's output."""

    def __init__(self, cell: str, layers: int, bidirectional: bool, dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(1000, 32)
        self.rnn = getattr(nn, cell)(32, 64, num_layers=layers, bidirectional=bidirectional, dropout=dropout, batch_first=True)
        self.head = nn.Linear(64 * (2 if bidirectional else 1), 10)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(tokens))[0][:, -1])


def recurrent(cell: str, layers: int = 2, bidirectional: bool = True, dropout: float = 0.25) -> nn.Module:
    """A recurrent classifier: a factory path for ``traincost cost``."""
    return _Recurrent(cell, layers, bidirectional, dropout)


RECURRENT = "examples.library_cases:recurrent"  # recurrent's factory path (the repository's root on PYTHONPATH)
_TOKENS = json.dumps({"tokens": {"shape": [32], "dtype": "int64", "range": [0, 1000]}})
_NO_BACKBONE = {"num_classes": 4, "weights_backbone": None}


def library_cases() -> dict[str, list[str]]:
    """Networks of other classes, each as ``traincost cost`` takes it (no ``--out-dir``, ``--hardware`` or batch):
    the Hugging Face, diffusers and torchvision commands of docs/models.md, recurrent nets, segmentation, optical flow
    and video networks."""
    cases = {}
    for args in library_cost_commands():
        dropped = ("--out-dir", "--hardware", "--batch")  # the bench's own
        kept = [a for i, a in enumerate(args) if a not in dropped and not (i and args[i - 1] in dropped)]
        cases[args[1].rsplit(":", 1)[1]] = kept[1:]  # after the command's name
    for cell in ("LSTM", "GRU", "RNN"):
        kwargs = json.dumps({"cell": cell})
        cases[f"{cell.lower()}_2layer_bidirectional"] = [RECURRENT, "--kwargs", kwargs, "--inputs", _TOKENS]
    for name in ("fcn_resnet50", "deeplabv3_mobilenet_v3_large"):
        cases[name] = [
            f"torchvision.models.segmentation:{name}",
            "--kwargs",
            json.dumps(_NO_BACKBONE),
            "--input-shape",
            "3,64,64",
        ]
    frames = json.dumps({"image1": {"shape": [3, 128, 128]}, "image2": {"shape": [3, 128, 128]}})
    cases["raft_small"] = ["torchvision.models.optical_flow:raft_small", "--inputs", frames, "--loss", "mse"]
    for name, clip in (("r3d_18", "3,4,32,32"), ("r2plus1d_18", "3,4,32,32"), ("swin3d_t", "3,4,64,64")):
        cases[name] = [f"torchvision.models.video:{name}", "--kwargs", '{"num_classes": 4}', "--input-shape", clip]
    return cases
