#!/usr/bin/env bash
# Snakemake runs this inside the new environment, from the directory it was started in (the checkout).
set -euo pipefail
python -m pip install -q -e '.[ort]'  # the workflow's workloads use the ONNX front end (MONET's method)
