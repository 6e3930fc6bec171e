"""The torch front end: torch traces one training step (``step``) or the eval-mode inference step (``inference``) as
core ATen ops, checked against eager torch and ``torch.optim`` in float64 (``check``), lowered to the Workload IR
(``lower``). No ONNX, no ONNX Runtime: it runs on every Python the project supports.

It imports :mod:`traincost.frontend.shared`, never :mod:`traincost.frontend.onnx`.
"""
