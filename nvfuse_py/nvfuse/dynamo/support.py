"""Which FX nodes nvfuse takes, and why not the others: the operator
support the partitioner asks. A node is fusible when its overload has a
translation (translate.TRANSLATIONS), every tensor it reads and makes has a
dtype nvfuse computes in, and what the translation needs is known (static
sizes where it needs them, only a dtype change for _to_copy)."""

import torch
from torch.fx.passes.operator_support import OperatorSupportBase

from .translate import NEEDS_SIZES, TRANSLATIONS

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


def _refuses_its_arguments(node):
    if node.target is aten._to_copy.default:
        # Inside a fusion layout is free; a region's outputs take the
        # strides torch's meta value gives them (region.py).
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
    if node.target is aten.div.Tensor_mode and node.kwargs.get("rounding_mode") == "floor":
        if not node.meta["val"].dtype.is_floating_point:
            return "integer floor division"
    if node.target in NEEDS_SIZES:
        sizes = node.args[0].meta["val"].shape
        if not all(isinstance(s, int) for s in sizes):
            return "needs its input's sizes, which are symbolic here"
    if node.target in (aten.full.default, aten.scalar_tensor.default):
        if node.kwargs.get("device") is not None and node.kwargs["device"].type not in (
            "cuda",
            "cpu",
        ):
            return "a device nvfuse does not run on"
    return None


def why_not_fusible(node):
    """None when nvfuse can take `node`, else the reason it stays ATen."""
    if node.op != "call_function":
        return f"a {node.op} node"  # graph inputs and outputs stay outside
    target = node.target
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
