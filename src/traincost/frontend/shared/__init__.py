"""What both front ends use: the torch model both start from (``torch_model``) with its random draws at their keep
values (``torch_randomness``), the optimizer's spec and the names of its inputs and outputs (``optimizer``), the rule
that tells rounding from a wrong graph (``rounding``), the table a check by execution writes (``step_check``) and which
storages the forward pass keeps for the backward pass (``saved``).

It imports neither front end. ``torch_`` in a name here means torch the library, which both front ends run.
"""
