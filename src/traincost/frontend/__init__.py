"""Front end: torch model → ONNX → training step graph → primitive graph → Workload IR."""

# How a training step's attentions are costed (``fused_attention``; ``traincost cost --attention``): as torch runs
# each one, all materialised, or all fused. Here, so that the command line offers them without importing ONNX.
ATTENTION_CHOICES = ("torch", "materialised", "fused")
