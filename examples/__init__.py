"""Networks and model factories that the tests and the bench share, and that the README and docs point users to.

``examples`` is a package at the repository's root, beside ``src/``, ``tests/`` and ``bench/``: importable with the
root on ``sys.path`` (pytest puts it there; the bench scripts insert it; ``PYTHONPATH=.`` for ``traincost cost``). The
tests and the bench import it; it imports neither.

* :mod:`examples.third_party`: torchvision and timm networks and a ``torch.nn.TransformerEncoder`` scaled down to test
  size (``NETWORKS``), and each builder of the torchvision and timm zoos as ``traincost cost`` takes it
  (``zoo_case``, through the package's factories ``traincost.models.library:torchvision_model`` and ``timm_model``).
* :mod:`examples.library_cases`: networks of other libraries and classes as ``traincost cost`` takes them, with no
  wrapper (README's Hugging Face commands, recurrent nets, segmentation, optical flow and video networks), and the
  recurrent classifier's factory ``examples.library_cases:recurrent``.
"""
