"""Front end: torch model → ONNX → training step graph → primitive graph → Workload IR."""
