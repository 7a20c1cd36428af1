"""Which FX nodes nvfuse takes, and why not the others: the operator
support the partitioner asks. A node is fusible when its overload has a
translation (translate.TRANSLATIONS), every tensor it reads and makes has a
dtype nvfuse computes in, and what the translation needs is known (static
sizes where it needs them, only a dtype change for _to_copy)."""

import torch
from torch.fx.passes.operator_support import OperatorSupportBase

from .passes.donated_buffers import is_written_buffer
from .passes.in_place_updates import is_input_update
from .translate import NEEDS_SIZES, TRANSLATIONS, static_sizes

aten = torch.ops.aten

FUSIBLE_DTYPES = {
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int32,
    torch.int64,
    torch.bool,
}


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _arguments(node):
    """The FX nodes among node's arguments, nested lists included."""
    found = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


def _meta(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _refuses_copy(node):
    # Inside a fusion layout is free; a region's outputs take the strides
    # torch's meta value gives them (layouts.py).
    kept = {"dtype", "memory_format"}
    extra = [
        k
        for k, v in node.kwargs.items()
        if k not in kept
        and v is not None
        and not (k == "device" and v == node.args[0].meta["val"].device)
        and not (k == "layout" and v == torch.strided)
    ]
    if extra:
        return f"_to_copy changes {', '.join(extra)}, not only the dtype"
    return None


def _refuses_index(node):
    indices = node.args[1]
    dims = [d for d, i in enumerate(indices) if i is not None]
    if any(_meta(indices[d]).dtype in (torch.bool, torch.uint8) for d in dims):
        return "a boolean mask: the result's size depends on the values"
    if dims != list(range(dims[0], dims[-1] + 1)):
        return "index tensors on axes that are not adjacent (torch moves their axes first)"
    return None


def _refuses_slice_scatter(node):
    step = node.args[5] if len(node.args) > 5 else node.kwargs.get("step", 1)
    bounds = list(node.args[3:5])
    if step != 1 or not all(b is None or isinstance(b, int) for b in bounds):
        return "a slice_scatter with a step or symbolic bounds is not translated"
    return None


def _refuses_strided_view(node):
    from .translate_indexing import covers_dense_row_major

    scatter = node.target is aten.as_strided_scatter.default
    size, stride = node.args[2:4] if scatter else node.args[1:3]
    offset_at = 4 if scatter else 3
    offset = node.args[offset_at] if len(node.args) > offset_at else None
    if not all(isinstance(v, int) for v in [*size, *stride, offset or 0]):
        return "a strided view with symbolic sizes"
    if not covers_dense_row_major(_meta(node.args[0]), size, stride, offset):
        return "a strided view that does not relabel all of a dense tensor"
    return None


def _refuses_index_put(node):
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    if not accumulate:
        return "index_put without accumulate is not translated (only the scatter-add)"
    if len(indices) != 1 or indices[0] is None or _meta(indices[0]).dtype == torch.bool:
        return "index_put is translated for one integer index tensor on axis 0"
    want = tuple(_meta(indices[0]).shape) + tuple(_meta(x).shape[1:])
    if tuple(_meta(values).shape) != want:
        return "index_put with values that broadcast is not translated"
    return None


def _refuses_constant_pad(node):
    if not all(isinstance(p, int) and p >= 0 for p in node.args[1]):
        return "negative or symbolic padding (a crop) is not translated"
    return None


def _refuses_symbolic(*positions):
    def check(node):
        for k in positions:
            if k < len(node.args) and not isinstance(node.args[k], (int, float)):
                return f"argument {k} is symbolic"
        return None

    return check


def _refuses_in_place(node):
    if not is_input_update(node):
        return "copy_ into a value that is not a graph input"
    return None


def _refuses_integer_floor_division(node):
    if node.kwargs.get("rounding_mode") == "floor" and not node.meta["val"].dtype.is_floating_point:
        return "integer floor division"
    return None


def _refuses_other_devices(node):
    device = node.kwargs.get("device")
    if device is not None and device.type not in ("cuda", "cpu"):
        return "a device nvfuse does not run on"
    return None


def _refuses_explicit_generator(node):
    if node.kwargs.get("generator") is not None:
        return "draws from an explicit torch.Generator (nvfuse draws from the default one)"
    return None


def _refuses_symbolic_sizes(node):
    if not all(isinstance(s, int) for s in node.args[0]):
        return "needs static sizes, which are symbolic here"
    return _refuses_other_devices(node)


# Per overload, what else its arguments must satisfy.
ARGUMENT_CHECKS = {
    aten._to_copy.default: _refuses_copy,
    aten.div.Tensor_mode: _refuses_integer_floor_division,
    aten.full.default: _refuses_other_devices,
    aten.scalar_tensor.default: _refuses_other_devices,
    aten.index.Tensor: _refuses_index,
    aten._unsafe_index.Tensor: _refuses_index,
    aten.index_put.default: _refuses_index_put,
    aten._unsafe_index_put.default: _refuses_index_put,
    aten.constant_pad_nd.default: _refuses_constant_pad,
    aten.arange.default: _refuses_symbolic(0),
    aten.arange.start: _refuses_symbolic(0, 1),
    aten.arange.start_step: _refuses_symbolic(0, 1, 2),
    aten.select.int: _refuses_symbolic(1, 2),
    aten.split.Tensor: _refuses_symbolic(1),
    aten.copy_.default: _refuses_in_place,
    aten.bernoulli.p: _refuses_explicit_generator,
    aten.empty.memory_format: _refuses_symbolic_sizes,
    aten.empty_permuted.default: _refuses_symbolic_sizes,
    aten.slice_scatter.default: _refuses_slice_scatter,
    aten.as_strided.default: _refuses_strided_view,
    aten.as_strided_scatter.default: _refuses_strided_view,
}


def _refuses_its_arguments(node):
    for which in NEEDS_SIZES.get(node.target, ()):
        if which == "operand_sizes":
            continue  # read as they are
        if not all(isinstance(s, int) for s in static_sizes(node, which)):
            return "needs static sizes, which are symbolic here"
    check = ARGUMENT_CHECKS.get(node.target)
    return None if check is None else check(node)


# Ops left to ATen on purpose: its kernel is the faster one.
LEFT_TO_ATEN = {
    aten.embedding_dense_backward.default: "ATen's embedding backward sums each index's rows "
    "in parallel segments; a scatter-add accumulates repeated indices one after another",
}


def why_not_fusible(node):
    """None when nvfuse can take `node`, else the reason it stays ATen."""
    if node.op != "call_function":
        return f"a {node.op} node"  # graph inputs and outputs stay outside
    if is_written_buffer(node):
        return "a buffer a region writes in place, read as the region's input"
    target = node.target
    if target in LEFT_TO_ATEN:
        return LEFT_TO_ATEN[target]
    if target not in TRANSLATIONS:
        return f"{getattr(target, '__name__', target)} has no nvfuse translation"
    if "val" not in node.meta:
        return "no meta value (shape and dtype unknown)"
    made = _tensors(node.meta["val"])
    if not made:
        return "its value is not a tensor"
    for arg in _arguments(node):
        for t in _tensors(arg.meta.get("val")) + made:
            if t.dtype not in FUSIBLE_DTYPES:
                return f"dtype {t.dtype}"
            if t.device.type not in ("cuda", "cpu"):
                return f"a tensor on {t.device}"
            if t.is_sparse or t.is_nested or t.layout != torch.strided:
                return "a non-strided tensor"
    return _refuses_its_arguments(node)


class NvfuseSupport(OperatorSupportBase):
    """The partitioner's question, with the reasons kept for the report."""

    def __init__(self):
        self.reasons = {}

    def is_node_supported(self, submodules, node):
        reason = why_not_fusible(node)
        if reason is not None and node.op == "call_function":
            self.reasons[node.name] = (str(node.target), reason)
        return reason is None
