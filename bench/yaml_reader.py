"""How long the strict YAML reader (``traincost.config_files.read_yaml``, on libyaml) takes, and how much memory, on
files up to its size limit (``MAX_YAML_BYTES``, 1 MiB) and past it, against PyYAML's pure-Python safe loader it
was built on before.

Each case is a hardware YAML (``tests/fixtures/hardware/tiny.yaml``) with one more key holding a flat list of small
integers, the shape that grows the parse fastest per byte; ``load`` is ``load_hardware`` on the same file (the
reader, then the schema check, which refuses the unknown key). Each runs in a fresh process, so the peak resident
memory is its own. The pure-Python loader is timed up to 1 MiB only (it grows about linearly: 4.7 s a MiB).

Usage::

    .venv/bin/python bench/yaml_reader.py
    .venv/bin/python bench/yaml_reader.py --sizes 0.1 2     # other file sizes, MiB
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"
SIZES_MIB = (0.25, 0.5, 0.99, 7.9)

_MEASURE = """
import json, resource, sys, time
import yaml
from traincost.config_files import read_yaml
from traincost.errors import TraincostError
from traincost.hardware import load_hardware
path, how = sys.argv[1], sys.argv[2]
began = time.perf_counter()
try:
    if how == "python":
        yaml.load(open(path).read(), Loader=yaml.SafeLoader)
    elif how == "read":
        read_yaml(path)
    else:
        load_hardware(path)
    outcome = "read"
except TraincostError as err:
    outcome = "refused: " + str(err).split(": ", 1)[1][:60]
seconds = time.perf_counter() - began
print(json.dumps({"seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "outcome": outcome}))
"""


def _file(folder: Path, mib: float) -> Path:
    items = int(mib * 2**20) // 4  # "- 1\n"
    path = folder / f"flat_{mib}.yaml"
    path.write_text(TINY.read_text() + "padding:\n" + "- 1\n" * items)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=list(SIZES_MIB), help=f"file sizes, MiB (default: {SIZES_MIB})")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mib in args.sizes:
            path = _file(Path(tmp), mib)
            for how in ("python", "read", "load"):
                if how == "python" and mib > 1:
                    continue
                command = [sys.executable, "-c", _MEASURE, str(path), how]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                rows.append({"MiB": mib, "reader": how, **json.loads(done.stdout)})
    print(f"{'MiB':>5}  {'reader':<7} {'seconds':>8} {'peak MiB':>9}  outcome")
    for row in rows:
        print(f"{row['MiB']:>5}  {row['reader']:<7} {row['seconds']:>8.2f} {row['peak_mib']:>9.0f}  {row['outcome']}")


if __name__ == "__main__":
    main()
