"""A traced training step (``step``) → Workload IR, as ``frontend.onnx.lower`` does for the ONNX front end's graph.

Each ATen op of the step is one op row (``convolution_backward`` is up to three: the data gradient, the weight
gradient and the bias gradient, as the ONNX front end decomposes ``ConvGrad``); its ``op_type`` is the ONNX operator
it computes where one does (``Conv``, ``MatMul``, ``Relu``, ``Reshape`` ...), so that every later stage reads both
front ends alike, else ``aten::<name>``. Every tensor is one row, with its shape and bytes from the values torch
traced.

Storage follows torch: an op whose schema says its output aliases an input (``view``, ``permute``, ``expand``,
``slice`` ...) makes a view of that input's storage (``view_of``), and an in-place op (``add_``, a BatchNorm's running
statistics) writes a new version of the tensor it mutates into the same storage; a mutated buffer's last version is
``<buffer>.updated``. So the saved activations are the storages torch's autograd keeps.
"""

from __future__ import annotations

import math
import operator

import pandas as pd
import torch

from traincost.errors import GraphError
from traincost.frontend.shared.saved import saved_for_backward
from traincost.frontend.shared.torch_model import LOGITS
from traincost.frontend.torch.step import SHARED_LAYER, STEP_META, TracedStep
from traincost.workload import (
    LOOP_DIMS,
    NORM_OPS_PER_ELEMENT,
    SOFTMAX_OPS_PER_ELEMENT,
    WINDOW_COLUMNS,
    Workload,
    conv_loops,
    made_kind,
    window_columns,
)

__all__ = ["lower_step", "ONNX_OP_TYPES", "uncosted_ops"]

_aten = torch.ops.aten

# ATen op → the ONNX operator it computes (the op_type every later stage reads).
ONNX_OP_TYPES = {
    "mm": "MatMul",
    "bmm": "MatMul",
    "addmm": "Gemm",
    "relu": "Relu",
    "add": "Add",
    "sub": "Sub",
    "rsub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "rsqrt": "Rsqrt",
    "reciprocal": "Reciprocal",
    "pow": "Pow",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "erf": "Erf",
    "abs": "Abs",
    "sign": "Sign",
    "clamp": "Clip",
    "clamp_min": "Clip",
    "clamp_max": "Clip",
    "maximum": "Max",
    "minimum": "Min",
    "where": "Where",
    "eq": "Equal",
    "ne": "NotEqual",
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
    "logical_not": "Not",
    "bitwise_not": "Not",
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "amax": "ReduceMax",
    "amin": "ReduceMin",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "argmax": "ArgMax",
    "argmin": "ArgMin",
    "prod": "ReduceProd",
    "var": "ReduceVar",
    "var_mean": "ReduceVar",
    "view": "Reshape",
    "_unsafe_view": "Reshape",
    "reshape": "Reshape",
    "unsqueeze": "Unsqueeze",
    "squeeze": "Squeeze",
    "alias": "Identity",
    "detach": "Identity",
    "permute": "Transpose",
    "transpose": "Transpose",
    "t": "Transpose",
    "expand": "Expand",
    "slice": "Slice",
    "select": "Gather",
    "index": "Gather",
    "index_select": "Gather",
    "gather": "GatherElements",
    "cat": "Concat",
    "split": "Split",
    "split_with_sizes": "Split",
    "constant_pad_nd": "Pad",
    "_to_copy": "Cast",
    "clone": "Copy",
    "copy": "Copy",
    "full": "ConstantOfShape",
    "full_like": "ConstantOfShape",
    "scalar_tensor": "ConstantOfShape",
    "empty": "ConstantOfShape",
    "empty_like": "ConstantOfShape",
    "empty_strided": "ConstantOfShape",
    "zeros": "ConstantOfShape",
    "zeros_like": "ConstantOfShape",
    "ones": "ConstantOfShape",
    "ones_like": "ConstantOfShape",
    "new_zeros": "ConstantOfShape",
    "new_empty": "ConstantOfShape",
    "new_ones": "ConstantOfShape",
    "new_full": "ConstantOfShape",
    "arange": "Range",
    "repeat": "Tile",
    "scatter": "ScatterElements",
    "scatter_add": "ScatterElements",
    "index_put": "ScatterND",
    "slice_scatter": "ScatterND",
    "select_scatter": "ScatterND",
    "max_pool2d_with_indices": "MaxPool",
    "max_pool2d_with_indices_backward": "MaxPoolGrad",
    "avg_pool2d": "AveragePool",
    "avg_pool2d_backward": "AveragePoolGrad",
    "_adaptive_avg_pool2d": "GlobalAveragePool",
    "_adaptive_avg_pool2d_backward": "GlobalAveragePoolGrad",
    "max_pool3d_with_indices": "MaxPool",
    "max_pool3d_with_indices_backward": "MaxPoolGrad",
    "avg_pool3d": "AveragePool",
    "avg_pool3d_backward": "AveragePoolGrad",
    "_adaptive_avg_pool3d": "GlobalAveragePool",
    "_adaptive_avg_pool3d_backward": "GlobalAveragePoolGrad",
    "native_batch_norm": "BatchNormalization",
    "_native_batch_norm_legit": "BatchNormalization",
    "_native_batch_norm_legit_no_training": "BatchNormalization",
    "native_layer_norm": "LayerNormalization",
    "native_group_norm": "GroupNormalization",
    "_softmax": "Softmax",
    "_log_softmax": "LogSoftmax",
    "_softmax_backward_data": "SoftmaxGrad",
    "_log_softmax_backward_data": "LogSoftmaxGrad",
    "native_dropout": "Dropout",
    "bernoulli": "Bernoulli",
    "rand": "RandomUniformLike",
    "rand_like": "RandomUniformLike",
    "randn": "RandomNormalLike",
    "randn_like": "RandomNormalLike",
}
_POOL = frozenset({"MaxPool", "MaxPoolGrad", "AveragePool", "AveragePoolGrad", "GlobalAveragePool", "GlobalAveragePoolGrad"})
_NORM = frozenset({"BatchNormalization", "LayerNormalization", "GroupNormalization"})
_SOFTMAX = frozenset({"Softmax", "LogSoftmax", "SoftmaxGrad", "LogSoftmaxGrad"})
_REDUCE = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceVar", "ArgMax", "ArgMin"})
_LAYOUT = frozenset(
    {
        "Reshape",
        "Unsqueeze",
        "Squeeze",
        "Identity",
        "Transpose",
        "Expand",
        "Slice",
        "Gather",
        "Concat",
        "Split",
        "Pad",
        "Cast",
        "Copy",
        "ConstantOfShape",
        "Range",
        "Tile",
    }
)
# ATen ops with no ONNX operator of their own beyond those torch tags pointwise (costed element-wise on their output),
# reductions or views: what each computes, as the rules of ``_shape_of`` and ``_elementwise`` cost that kind. An ATen
# op in none of these is refused (``uncosted_ops``): the lowering knows no loops for it.
_ATEN_KINDS = {
    "as_strided": "layout",  # also in place (as_strided_): the tensor's strides rewritten
    "empty_permuted": "layout",
    "new_empty_strided": "layout",
    "lift_fresh_copy": "layout",
    "embedding": "layout",  # a gather of rows
    "embedding_dense_backward": "eltwise",  # each gradient element added into its row
    "fmod": "eltwise",
    "cumsum": "eltwise",  # one add per element
    "remainder": "eltwise",
    "upsample_nearest2d": "layout",
    "upsample_nearest2d_backward": "eltwise",  # each gradient element added into its source
    "upsample_bilinear2d": "eltwise",  # each output element interpolated
    "upsample_bilinear2d_backward": "eltwise",
    "grid_sampler_2d": "eltwise",  # each output element sampled from its four neighbours
    "grid_sampler_2d_backward": "eltwise",
    "threshold_backward": "eltwise",
    "hardtanh_backward": "eltwise",
    "leaky_relu_backward": "eltwise",
    "gelu_backward": "eltwise",
    "silu_backward": "eltwise",
    "sigmoid_backward": "eltwise",
    "tanh_backward": "eltwise",
}
_SPECIAL = frozenset(
    {
        _aten.convolution_backward.default,
        _aten._scaled_dot_product_flash_attention_for_cpu.default,
        _aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
        _aten.convolution.default,
    }
)
# In-place writes an op's schema does not declare: native_batch_norm in training mode (its argument 5) updates its
# running mean and variance (arguments 3 and 4), as ``_native_batch_norm_legit``'s schema says.
_UNDECLARED_WRITES = {_aten.native_batch_norm.default: (3, 4)}


def lower_step(step: TracedStep) -> Workload:
    """The Workload of a traced step (a training step, or an inference step: ``inference``).

    Raises:
        GraphError: an op the lowering cannot cost (``uncosted_ops``), before any is lowered, naming each with its
            layer.
    """
    uncosted = uncosted_ops(step.graph)
    if uncosted:
        listed = "; ".join(
            f"{op} ({', '.join(layers[:3])}{', ...' if len(layers) > 3 else ''})" for op, layers in uncosted.items()
        )
        raise GraphError(
            f"torch front end, {step.meta['model']}: {len(uncosted)} ATen op(s) the lowering cannot cost, by layer: "
            f"{listed}; costing them as nothing would understate the step"
        )
    return _Lowering(step).workload()


def uncosted_ops(graph: torch.fx.GraphModule) -> dict[str, list[str]]:
    """The ATen ops of ``graph`` the lowering cannot cost, each with the layers it runs in (in order): neither an
    ONNX operator's, nor costed by a rule of its own (convolutions, their gradients, fused attention), nor tagged
    pointwise or a reduction by torch, nor a view, nor one of ``_ATEN_KINDS``."""
    found: dict[str, list[str]] = {}
    for node in graph.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem or _aten_kind(node) is not None:
            continue
        if node.target in _SPECIAL or node.target.overloadpacket.__name__.removesuffix("_") in ONNX_OP_TYPES:
            continue
        layers = found.setdefault(f"aten::{node.target.overloadpacket.__name__}", [])
        layer = "/".join(node.meta.get(STEP_META, ("", "")))
        if layer not in layers:
            layers.append(layer)
    return found


def _aten_kind(node: torch.fx.Node) -> str | None:
    """The kind of an ATen op with no ONNX operator: by ``_ATEN_KINDS``, else by its tags and schema (None: unknown)."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return None
    name = target.overloadpacket.__name__.removesuffix("_")
    if name in _ATEN_KINDS:
        return _ATEN_KINDS[name]
    if torch.Tag.pointwise in target.tags:
        return "eltwise"
    if torch.Tag.reduction in target.tags:
        return "reduce"
    returns = target._schema.returns
    if returns and returns[0].alias_info is not None and not returns[0].alias_info.is_write:
        return "layout"  # a view of an input
    return None


class _Lowering:
    def __init__(self, step: TracedStep) -> None:
        self.step = step
        self.tensors: list[dict[str, object]] = []
        self.ops: list[dict[str, object]] = []
        self.current: dict[torch.fx.Node, int] = {}  # fx value → its latest tensor version
        self.items: dict[tuple[torch.fx.Node, int], int] = {}  # (tuple-returning node, index) → tensor
        self.root: list[int] = []  # per tensor: the tensor that owns its storage
        self.owners: dict[str, str] = {}  # per tensor name: the layer of the first forward op that reads it

    def workload(self) -> Workload:
        graph = self.step.graph.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        kinds = dict.fromkeys(self.step.params, "weight") | dict.fromkeys(self.step.buffers, "buffer")
        kinds |= dict.fromkeys(self.step.state_inputs, "optimizer_state")
        for node, name in zip(placeholders, self.step.inputs, strict=True):
            self.current[node] = self._tensor(name, node.meta["val"], producer=-1, kind=kinds.get(name, "input"))
        for node in graph.nodes:
            if node.op == "get_attr":  # a tensor the module computes once, outside the step (torch keeps it as a constant)
                self.current[node] = self._tensor(node.name, getattr(self.step.graph, node.target), producer=-1, kind="constant")
            elif node.op == "call_function" and node.target is not operator.getitem:
                self._op(node)
        self._name_outputs(next(n for n in graph.nodes if n.op == "output"))
        ops = pd.DataFrame(self.ops)
        ops = ops.astype({d: "int64" for d in (*LOOP_DIMS, *WINDOW_COLUMNS, "macs", "elementwise_ops")})
        tensors = pd.DataFrame(self.tensors)
        consumers: list[list[int]] = [[] for _ in range(len(tensors))]
        for row in self.ops:
            for t in dict.fromkeys(row["inputs"]):
                consumers[t].append(row["op"])
        tensors["consumers"] = consumers
        phase = ops["phase"].to_numpy()
        made_by = tensors["producer"].to_numpy()
        tensors["kind"] = [kind or made_kind(phase[producer]) for kind, producer in zip(tensors["kind"], made_by, strict=True)]
        own = tensors["kind"].isin(["activation", "gradient", "temporary"]).to_numpy()
        roots = pd.Series(self.root)
        tensors["view_of"] = [int(r) if keep and r != t else -1 for t, (r, keep) in enumerate(zip(roots, own, strict=True))]
        tensors = tensors.astype({"dtype_bytes": "int64", "bytes": "int64", "producer": "int64", "updates": "int64"})
        tensors["saved_for_backward"] = saved_for_backward(tensors, ops)
        meta = {**self.step.meta, "precision": "fp32", "source": self.step.meta["model"]}
        return Workload(ops=ops, tensors=tensors, meta=meta)

    def _tensor(self, name: str, value: torch.Tensor, *, producer: int, kind: str = "", root: int = -1, updates: int = -1) -> int:
        t = len(self.tensors)
        self.tensors.append(
            {
                "tensor": t,
                "name": name,
                "kind": kind,  # "": from the producer's phase, once every op is known
                "shape": list(value.shape),
                "dtype_bytes": value.dtype.itemsize,
                "bytes": value.numel() * value.dtype.itemsize,
                "producer": producer,
                "saved_for_backward": False,
                "updates": updates,
            }
        )
        self.root.append(self.root[root] if root >= 0 else t)
        return t

    def _op(self, node: torch.fx.Node) -> None:
        phase, layer = node.meta[STEP_META]
        if phase == "optimizer" and layer != SHARED_LAYER:
            layer = self._owner(layer)
        name = node.target.overloadpacket.__name__.removesuffix("_")  # an in-place op computes what its namesake does
        inputs = self._inputs(node)
        if node.target is _aten.convolution_backward.default:
            self._convolution_backward(node, inputs, phase, layer)
            return
        if node.target is _aten._scaled_dot_product_flash_attention_for_cpu_backward.default:
            self._flash_attention_backward(node, inputs, phase, layer)
            return
        if node.target is _aten._scaled_dot_product_flash_attention_for_cpu.default:
            self._flash_attention(node, inputs, phase, layer)
            return
        outputs = self._outputs(node)
        op_type = ONNX_OP_TYPES.get(name, f"aten::{name}")
        if node.target is _aten.convolution.default:
            op_type = "ConvTranspose" if node.args[6] else "Conv"
        kind, dims, window = _shape_of(node, op_type)
        elementwise = _elementwise(node, op_type, kind)
        where = (phase, layer)
        self._row(
            node.name, op_type, kind, where, dims=dims, window=window, elementwise=elementwise, inputs=inputs, outputs=outputs
        )

    def _owner(self, param: str) -> str:
        """The optimizer's layer for ``param``: the first forward op that reads it (a shared weight: where it is read first)."""
        if not self.owners:  # the optimizer's ops come after every forward op
            for row in self.ops:
                for t in row["inputs"] if row["phase"] == "forward" else ():
                    self.owners.setdefault(self.tensors[t]["name"], row["layer"])
        return self.owners.get(param, SHARED_LAYER)

    def _inputs(self, node: torch.fx.Node) -> list[int]:
        ids = []
        for value in [*node.args, *node.kwargs.values()]:
            for item in value if isinstance(value, list | tuple) else [value]:
                if isinstance(item, torch.fx.Node):
                    ids.append(self._value(item))
        return ids

    def _value(self, node: torch.fx.Node) -> int:
        if node.target is operator.getitem:
            return self.items[node.args[0], node.args[1]]
        return self.current[node]

    def _outputs(self, node: torch.fx.Node) -> list[int]:
        """The tensors ``node`` writes: its results (a view shares its input's storage) and, for a mutating op, the new
        version of each tensor it writes in place (returned or not)."""
        schema = node.target._schema
        arguments = [(arg, spec.alias_info) for arg, spec in zip(node.args, schema.arguments, strict=False)]
        # each argument an output may alias, by its alias set (``Tensor(a)``); a list of views (``split``, ``chunk``,
        # ``unbind``: ``Tensor(a -> *) self`` returning ``Tensor(a)[]``) shows its elements' set only as the wildcard
        # the argument joins, its return's own sets empty
        tensors = [(arg, info) for arg, info in arguments if isinstance(arg, torch.fx.Node) and info]
        aliased = {frozenset(info.before_set): arg for arg, info in tensors}
        aliased |= {frozenset(): arg for arg, info in tensors if "*" in info.after_set}
        values = node.meta["val"]
        single = not isinstance(values, list | tuple)
        users = _items(node)
        outs, written = [], set()
        results = [values] if single else list(values)
        # one list return (``split``'s ``Tensor(a)[]``) describes every element
        returns = schema.returns if len(schema.returns) == len(results) else [schema.returns[0]] * len(results)
        for index, (value, returned) in enumerate(zip(results, returns, strict=True)):
            if not isinstance(value, torch.Tensor) or not (single or index in users):
                continue
            holder = node if single else users[index]
            info = returned.alias_info
            source = aliased.get(frozenset(info.before_set)) if info is not None else None
            if source is not None and info.is_write:
                t = self._new_version(source, value, holder.name)
                written.add(source)
            else:
                t = self._tensor(
                    holder.name, value, producer=len(self.ops), root=self._value(source) if source is not None else -1
                )
            self.current[node] = t
            if not single:
                self.items[node, index] = t
            outs.append(t)
        undeclared = (
            [node.args[i] for i in _UNDECLARED_WRITES.get(node.target, ())] if len(node.args) > 5 and node.args[5] is True else []
        )
        for arg in [*(a for a, info in arguments if info is not None and info.is_write), *undeclared]:
            if isinstance(arg, torch.fx.Node) and arg not in written:  # written in place, not returned
                outs.append(self._new_version(arg, arg.meta["val"], f"{node.name}.{arg.name}"))
        return outs

    def _new_version(self, arg: torch.fx.Node, value: torch.Tensor, name: str) -> int:
        """A tensor written in place: a new version in the same storage, or ``<name>.updated`` (a storage of its own, as
        the ONNX front end has it) where it is a buffer of the module."""
        before = self._value(arg)
        row = self.tensors[before]
        if row["kind"] == "buffer":
            base = row["name"].removesuffix(".updated")
            t = self._tensor(
                f"{base}.updated", value, producer=len(self.ops), kind="buffer", updates=self.step.inputs.index(base)
            )
        else:
            t = self._tensor(name, value, producer=len(self.ops), root=before)
        self.current[arg] = t
        return t

    def _convolution_backward(self, node: torch.fx.Node, inputs: list[int], phase: str, layer: str) -> None:
        """``convolution_backward``: the data gradient (a ConvTranspose, or a Conv for a transposed convolution), the
        weight gradient (a Conv of the input with the output gradient) and the bias gradient (a ReduceSum), each an op
        reading what it needs, with the forward convolution's loop nest."""
        grad_out, x, w = node.args[:3]
        stride, _, dilation, transposed, _, groups, mask = node.args[4:11]
        dy, xv, wv = grad_out.meta["val"].shape, x.meta["val"].shape, w.meta["val"].shape
        if transposed:  # the forward nest of a transposed convolution: over its input (dims as a data gradient's)
            dims = conv_loops(xv[2:], wv[2:], batch=xv[0], out_channels=wv[0] // groups, in_channels=wv[1], groups=groups)
        else:
            dims = conv_loops(dy[2:], wv[2:], batch=xv[0], out_channels=dy[1] // groups, in_channels=wv[1], groups=groups)
        window = window_columns(stride, dilation)
        users = _items(node)
        reads = {"dx": [inputs[0], inputs[2]], "dw": [inputs[0], inputs[1]], "db": [inputs[0]]}
        parts = (
            ("dx", "ConvTranspose" if not transposed else "Conv", "conv_dgrad" if not transposed else "conv"),
            ("dw", "Conv", "conv_wgrad"),
            ("db", "ReduceSum", "reduce"),
        )
        for index, (part, op_type, kind) in enumerate(parts):
            if not mask[index] or index not in users:
                continue
            value = users[index].meta["val"]
            t = self._tensor(users[index].name, value, producer=len(self.ops))
            self.items[node, index] = t
            macs_dims = dims if kind != "reduce" else {}
            elementwise = self.tensors[inputs[0]]["bytes"] // self.tensors[inputs[0]]["dtype_bytes"] if kind == "reduce" else 0
            self._row(
                f"{node.name}.{part}",
                op_type,
                kind,
                (phase, layer),
                dims=macs_dims,
                window=window if macs_dims else {},
                elementwise=elementwise,
                inputs=reads[part],
                outputs=[t],
            )

    def _flash_attention(self, node: torch.fx.Node, inputs: list[int], phase: str, layer: str) -> None:
        """torch's fused attention (FlashAttention's forward): the output O = softmax(Q Kᵀ) V and the log-sum-exp of each
        row of scores, tile by tile, the scores never stored. One row: the two products of L x S x E per head (V's
        width taken as E) and the softmax's five operations per score element."""
        heads, length, source, width = _attention_sizes(node)
        outputs = self._outputs(node)
        dims = {"B": 2 * heads, "OY": length, "C": width, "K": source}
        scores = SOFTMAX_OPS_PER_ELEMENT * heads * length * source
        where = (phase, layer)
        self._row(
            node.name,
            "FlashAttention",
            "matmul",
            where,
            dims=dims,
            window={},
            elementwise=scores,
            inputs=inputs[:3],
            outputs=outputs,
        )

    def _flash_attention_backward(self, node: torch.fx.Node, inputs: list[int], phase: str, layer: str) -> None:
        """torch's fused attention backward (FlashAttention's): from the output gradient dO, Q, K, V, the output O and
        the log-sum-exp it recomputes the scores S = Q Kᵀ and P = exp(S - LSE) tile by tile, never storing them, then
        dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP - rowsum(dO ∘ O)), dQ = dS K and dK = dSᵀ Q. One row per gradient it
        writes: dQ with the three products of L x S x E per head it needs (S, dP, dQ; V's width taken as E, as in
        multi-head attention), dK and dV with one each, and the five operations per score element with dQ."""
        heads, length, source, width = _attention_sizes(node, first=1)
        users = _items(node)
        # grad_out, query, key, value, out, logsumexp
        reads = {0: inputs[:6], 1: inputs[:3] + inputs[4:6], 2: [inputs[0], *inputs[1:3], inputs[5]]}
        products = {0: 3, 1: 1, 2: 1}
        for index, part in enumerate(("dq", "dk", "dv")):
            if index not in users:
                continue
            t = self._tensor(users[index].name, users[index].meta["val"], producer=len(self.ops))
            self.items[node, index] = t
            dims = {"B": products[index] * heads, "OY": length, "C": width, "K": source}
            scores = SOFTMAX_OPS_PER_ELEMENT * heads * length * source if index == 0 else 0
            where = (phase, layer)
            name = f"{node.name}.{part}"
            self._row(
                name,
                "FlashAttentionGrad",
                "matmul",
                where,
                dims=dims,
                window={},
                elementwise=scores,
                inputs=reads[index],
                outputs=[t],
            )

    def _row(
        self,
        name: str,
        op_type: str,
        kind: str,
        where: tuple[str, str],
        *,
        dims: dict[str, int],
        window: dict[str, int],
        elementwise: int,
        inputs: list[int],
        outputs: list[int],
    ) -> None:
        """Append one op: ``where`` is its (phase, layer); ``dims`` its loops (none: no MACs)."""
        phase, layer = where
        loops = dict.fromkeys(LOOP_DIMS, 1) | dims
        self.ops.append(
            {
                "op": len(self.ops),
                "name": name,
                "op_type": op_type,
                "kind": kind,
                "phase": phase,
                "layer": layer,
                **loops,
                **(dict.fromkeys(WINDOW_COLUMNS, 1) | window),
                "macs": math.prod(loops.values()) if dims else 0,
                "elementwise_ops": elementwise,
                "inputs": inputs,
                "outputs": outputs,
            }
        )

    def _name_outputs(self, output: torch.fx.Node) -> None:
        """Name the step's results as the ONNX front end does: ``loss``, ``<param>_grad``, ``<name>.updated``; each is a
        storage of its own (a weight gradient a transpose wrote is still a gradient buffer)."""
        params = set(self.step.params)
        for value, name in zip(output.args[0], self.step.outputs, strict=True):
            t = self._value(value)
            row = self.tensors[t]
            base = name.removesuffix(".updated")
            if row["producer"] == -1:
                raise GraphError(
                    f"torch front end: the step's output {name!r} is its input {row['name']!r}; expected a computed value"
                )
            row["name"] = name
            if name in ("loss", LOGITS):
                row["kind"] = "output"
            elif name.endswith("_grad"):
                row["kind"] = "weight_grad"
            else:
                row["kind"] = "weight" if base in params else "optimizer_state"
                row["updates"] = self.step.inputs.index(base)
            self.root[t] = t


def _items(node: torch.fx.Node) -> dict[int, torch.fx.Node]:
    """The ``getitem`` nodes that read the results of a tuple-returning ``node``, by index (a result nothing reads has
    none)."""
    return {user.args[1]: user for user in node.users if user.target is operator.getitem}


def _attention_sizes(node: torch.fx.Node, *, first: int = 0) -> tuple[int, int, int, int]:
    """An attention kernel's heads (batch x heads), query length, key length and width, from its Q and K (arguments
    ``first`` and ``first + 1``)."""
    q, k = (arg.meta["val"].shape for arg in node.args[first : first + 2])
    return math.prod(q[:-2]), q[-2], k[-2], q[-1]


def _shape_of(node: torch.fx.Node, op_type: str) -> tuple[str, dict[str, int], dict[str, int]]:
    """The op's kind, loop dimensions (ZigZag naming; empty: no MACs) and convolution window."""
    args = node.args
    shape = [a.meta["val"].shape if isinstance(a, torch.fx.Node) else None for a in args]
    if op_type in ("Conv", "ConvTranspose"):
        x, w, y = shape[0], shape[1], node.meta["val"].shape
        groups = args[8]
        if op_type == "Conv":
            dims = conv_loops(y[2:], w[2:], batch=x[0], out_channels=y[1] // groups, in_channels=w[1], groups=groups)
            return "conv", dims, window_columns(args[3], args[5])
        dims = conv_loops(x[2:], w[2:], batch=x[0], out_channels=w[0] // groups, in_channels=w[1], groups=groups)
        return "conv_dgrad", dims, window_columns(args[3], args[5])
    if node.target is _aten.mm.default:
        return "matmul", {"OY": shape[0][0], "C": shape[0][1], "K": shape[1][1]}, {}
    if node.target is _aten.bmm.default:
        return "matmul", {"B": shape[0][0], "OY": shape[0][1], "C": shape[0][2], "K": shape[1][2]}, {}
    if node.target is _aten.addmm.default:
        return "gemm", {"OY": shape[1][0], "C": shape[1][1], "K": shape[2][1]}, {}
    if op_type in _POOL:
        return "pool", {}, {}
    if op_type in _NORM:
        return "norm", {}, {}
    if op_type in _SOFTMAX:
        return "softmax", {}, {}
    if op_type in _REDUCE:
        return "reduce", {}, {}
    if op_type in _LAYOUT:
        return "layout", {}, {}
    return (_aten_kind(node) if op_type.startswith("aten::") else None) or "eltwise", {}, {}


def _elementwise(node: torch.fx.Node, op_type: str, kind: str) -> int:
    """Non-MAC arithmetic of one op, counted as ``frontend.onnx.lower`` counts it for the same ONNX operator."""
    values = node.meta["val"]
    out = values[0] if isinstance(values, list | tuple) else values
    out_numel = out.numel() if isinstance(out, torch.Tensor) else 0
    first = node.args[0].meta["val"] if node.args and isinstance(node.args[0], torch.fx.Node) else None
    first_numel = first.numel() if isinstance(first, torch.Tensor) else 0
    match kind:
        case "layout" | "conv_dgrad" | "matmul":
            return 0
        case "conv":
            return out_numel if len(node.args) > 2 and node.args[2] is not None else 0
        case "gemm":
            return out_numel
        case "reduce":
            return first_numel
        case "norm":
            return NORM_OPS_PER_ELEMENT * first_numel
        case "softmax":
            return SOFTMAX_OPS_PER_ELEMENT * max(first_numel, out_numel)
        case "pool":
            if op_type in ("MaxPool", "AveragePool"):
                return out_numel * math.prod(node.args[1])
            return max(first_numel, out_numel)
        case _:
            if op_type in ("ScatterElements", "ScatterND"):
                source = node.args[-1]
                return source.meta["val"].numel() if isinstance(source, torch.fx.Node) else out_numel
            return out_numel
