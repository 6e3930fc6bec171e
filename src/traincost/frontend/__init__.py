"""Front ends: a torch model → one training step → Workload IR, by torch's own trace of the step (:mod:`.torch`:
``step``, ``lower``, ``check``) or through ONNX and ONNX Runtime Training (:mod:`.onnx`: ``export``, ``train_graph``,
``decompose``, ``lower``, ``verification``).

What both use is in :mod:`.shared` (the torch model, the optimizer's spec, randomness switched off, the rounding rule,
the check's table, what the forward pass saves); ``torch`` and ``onnx`` import it and never each other, and it imports
neither (``tests/unit/test_layering.py``). ``agreement`` compares the two front ends' workloads and imports neither.
"""

# How a training step's attentions are costed (``onnx.fused_attention``; ``traincost cost --attention``): as torch runs
# each one, all materialised, or all fused. Here, so that the command line offers them without importing ONNX.
ATTENTION_CHOICES = ("torch", "materialised", "fused")

# Who builds a training step (``traincost cost --frontend``, the workload key ``frontend``).
FRONTENDS = ("torch", "onnx")
