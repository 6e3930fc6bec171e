"""Front ends: a torch model → one training step → Workload IR, by torch's own trace of the step (``torch_step``,
``torch_lower``, ``torch_check``) or through ONNX and ONNX Runtime Training (``export``, ``train_graph``, ``decompose``,
``lower``, ``verification``)."""

# How a training step's attentions are costed (``fused_attention``; ``traincost cost --attention``): as torch runs
# each one, all materialised, or all fused. Here, so that the command line offers them without importing ONNX.
ATTENTION_CHOICES = ("torch", "materialised", "fused")

# Who builds a training step (``traincost cost --frontend``, the workload key ``frontend``).
FRONTENDS = ("torch", "onnx")
