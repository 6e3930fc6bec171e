"""The ONNX front end (MONET's method; the ``ort`` extra): torch → ONNX (``export``, ``inference_graph``, or a user's
file: ``file_import``) → forward, backward and optimizer in one graph by ONNX Runtime Training (``train_graph``,
``optimizer_step``, ``optimizer_check``) → primitive ONNX ops (``decompose`` with ``gradient_rules`` and
``forward_rewrites``), checked by execution (``verification``) → Workload IR (``lower``). ``graph`` reads, writes and
annotates ONNX graphs; ``execute`` runs them in ONNX Runtime (``ort``).

It imports :mod:`traincost.frontend.shared`, never :mod:`traincost.frontend.torch`.
"""
