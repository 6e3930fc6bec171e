"""Every torchvision classification builder, and timm models across families, through ``traincost cost``: a table.

    python bench/third_party.py torchvision [--frontend torch|onnx] [--only NAME,...] [--timeout S] [--out FILE.csv]
    python bench/third_party.py timm        [--frontend torch|onnx] [--only NAME,...] [--timeout S] [--out FILE.csv]
    python bench/third_party.py library     [--only NAME,...] [--timeout S] [--out FILE.csv]
    python bench/third_party.py --markdown FILE.csv ...   (the tables of docs/zoo_coverage.md from runs' CSV files)

Run from the repository root (it imports ``examples.third_party``; torchvision and timm come from the ``test``
extra). Each builder as a user would give it: random weights, ``num_classes=10``, the smallest image side
its forward accepts (``examples.third_party.zoo_case``), batch 2, Adam, on the Edge TPU description, one
``traincost cost`` process each on the front end ``--frontend`` names (default torch; ``--no-verify`` for a
builder whose parameters, gradients and Adam states take more than 8 GB). Per builder: the exit status, wall
seconds, the error line, the workload's ops, the check's tensors held / compared, and the saved activations ours
and torch's (measured in this process with ``saved_tensors_hooks``, ``traincost.memory.torch_measure``).

``library``: networks of other classes as they come (``examples.library_cases``: docs/models.md's Hugging Face,
diffusers and torchvision commands, recurrent nets, segmentation, optical flow and video networks), each with its own
inputs and loss, batch 2, on the Edge TPU description; per network the exit status, seconds, the error line, the
ops, the tensors and weight gradients the check compared and held, and the precision it ran in.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples import library_cases, third_party  # noqa: E402 (after the path above)
from traincost.frontend.shared.optimizer import OptimizerSpec  # noqa: E402

BATCH = 2
HARDWARE = ROOT / "config" / "hardware" / "edge_tpu.yaml"
STATE_LIMIT_BYTES = 8e9  # parameters, gradients and two Adam moments above this are run with --no-verify
ADAM = OptimizerSpec(kind="adam", lr=0.001)


def run_case(zoo: str, name: str, *, frontend: str, timeout_s: float) -> dict[str, object]:
    """One builder through ``traincost cost``; its row of the table."""
    row: dict[str, object] = {"zoo": zoo, "model": name, "frontend": frontend}
    try:
        case = third_party.zoo_case(zoo, name)
    except ValueError as err:
        return row | {"exit": "no input", "error": str(err)}
    torch_bytes = case.torch_memory(f"{zoo}_{name}_torch", batch=BATCH, optimizer=ADAM)
    state_bytes = torch_bytes["weights"] + torch_bytes["gradients"] + torch_bytes["optimizer_states"]
    verify = state_bytes <= STATE_LIMIT_BYTES
    row |= {
        "side": case.side,
        "params_m": torch_bytes["weights"] / 4e6,
        "state_gb": state_bytes / 1e9,
        "verified": verify,
        "saved_torch_mb": torch_bytes["saved_activations"] / 1e6,
    }
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cost"
        args = [*case.cost_args(f"{zoo}_{name}"), "--optimizer", "adam", "--lr", "0.001", "--frontend", frontend]
        ran, done = _cost(args + ([] if verify else ["--no-verify"]), out, timeout_s=timeout_s)
        row |= ran
        if done is None or done.returncode != 0:
            return row
        ops = pd.read_parquet(out / "ops.parquet", columns=["op_type"])
        memory = pd.read_parquet(out / "memory.parquet").set_index("category")
        checked = pd.read_parquet(out / "verification.parquet")
    compared = checked[checked["check"] == "end_to_end"]
    saved_ours = float(memory.loc["saved_activations", "total_bytes"])
    return row | {
        "ops": len(ops),
        "held": int(compared["held"].sum()),
        "compared": len(compared),
        "saved_ours_mb": saved_ours / 1e6,
        "saved_ratio": saved_ours / torch_bytes["saved_activations"] if torch_bytes["saved_activations"] else float("nan"),
    }


def _cost(args: list[str], out: Path, *, timeout_s: float) -> tuple[dict[str, object], subprocess.CompletedProcess | None]:
    """``traincost cost ARGS`` at batch 2 on the Edge TPU, its tables in ``out``, in a process of its own: the row's
    exit status, seconds and error line, and the process (None: stopped at ``timeout_s``)."""
    command = [
        str(Path(sys.executable).with_name("traincost")), "--quiet", "cost", *args,
        "--batch", str(BATCH), "--hardware", str(HARDWARE), "--out-dir", str(out),
    ]  # fmt: skip
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = os.environ | {"PYTHONPATH": path}  # examples.library_cases:recurrent, a factory path
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "seconds": timeout_s}, None
    row: dict[str, object] = {"exit": str(done.returncode), "seconds": time.perf_counter() - start}
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        row["error"] = lines[-1] if lines else ""
    return row, done


def run_library_case(name: str, args: list[str], *, timeout_s: float) -> dict[str, object]:
    """One network of ``examples.library_cases`` through ``traincost cost``; its row of the table."""
    row: dict[str, object] = {"zoo": "library", "model": name, "factory": args[0]}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cost"
        ran, done = _cost(args, out, timeout_s=timeout_s)
        row |= ran
        if done is None or done.returncode != 0:
            return row
        ops = pd.read_parquet(out / "ops.parquet", columns=["op_type"])
        checked = pd.read_parquet(out / "verification.parquet")
    compared = checked[checked["check"] == "end_to_end"]
    grads = compared[compared["name"].str.endswith("_grad")]
    loss = next((line.strip() for line in done.stdout.splitlines() if line.strip().startswith("loss:")), "")
    return row | {
        "ops": len(ops),
        "held": int(compared["held"].sum()),
        "compared": len(compared),
        "grads_held": f"{int(grads['held'].sum())} / {len(grads)}",
        "precision": compared["precision"].iloc[0] if len(compared) else "",
        "loss": loss.removeprefix("loss: "),
    }


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, with a line of how many passed."""
    table = table.reindex(columns=list(dict.fromkeys([*table.columns, "held", "compared"])))
    passed = (table["exit"] == "0").sum()
    shown = table.assign(
        held=[f"{h:.0f} / {c:.0f}" if pd.notna(h) else "" for h, c in zip(table["held"], table["compared"], strict=True)]
    ).drop(columns=["compared"])
    return f"{passed} of {len(table)} pass.\n\n" + shown.to_markdown(index=False, floatfmt=".3g")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zoo", nargs="?", choices=["torchvision", "timm", "library"])
    parser.add_argument("--frontend", choices=["torch", "onnx"], default="torch", help="the front end (default torch)")
    parser.add_argument("--only", help="comma-separated builder names (default: the whole zoo)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per builder (default 1800)")
    parser.add_argument("--out", type=Path, help="CSV written after each builder (a run can be watched or resumed)")
    parser.add_argument("--markdown", type=Path, nargs="+", help="print earlier runs' CSV files as Markdown tables")
    args = parser.parse_args()
    if args.markdown:
        for path in args.markdown:
            print(f"### {path.name}\n\n{markdown(pd.read_csv(path, dtype={'exit': str}))}\n")
        return
    if args.zoo is None:
        parser.error("a zoo (torchvision, timm or library) or --markdown")
    library = library_cases.library_cases() if args.zoo == "library" else {}
    every = {"torchvision": third_party.torchvision_names, "timm": lambda: list(third_party.TIMM_MODELS)}
    names = args.only.split(",") if args.only else list(library) if library else every[args.zoo]()
    done = pd.read_csv(args.out, dtype={"exit": str}) if args.out and args.out.exists() else pd.DataFrame(columns=["model"])
    rows = done.to_dict("records")
    for name in names:
        if name in set(done["model"]):
            continue
        if library:
            row = run_library_case(name, library[name], timeout_s=args.timeout)
        else:
            row = run_case(args.zoo, name, frontend=args.frontend, timeout_s=args.timeout)
        print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
        rows.append(row)
        if args.out:
            pd.DataFrame(rows).to_csv(args.out, index=False)
    print(markdown(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
