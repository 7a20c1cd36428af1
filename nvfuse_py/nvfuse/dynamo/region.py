"""One fused partition of an FX graph, run by nvfuse.

The partition's graph becomes a FusionDefinition the first time it runs
with a given input layout (dtypes, which axes are size 1, contiguity and
stride order). The sizes Dynamo fixed for the graph are fixed in the
definition; those it made symbolic (dynamic batch or sequence) stay
symbolic, so a new size reuses the definition. The fusion cache shares a
definition between graphs of the same structure. Python numbers among the
inputs (Dynamo's symbolic sizes) become symbolic scalars."""

import torch
from torch.fx.node import map_arg

from .. import _C
from ..fusion_definition import FusionDefinition
from ..pytorch_utils import python_scalar_dtype, torch_dtype_to_nvfuse_dtype
from .translate import NEEDS_SIZES, TRANSLATIONS


def _static_sizes_of(meta):
    """Per axis, the size Dynamo fixed for this graph (an int), or None
    where its size is symbolic; None for a non-tensor."""
    if not isinstance(meta, torch.Tensor):
        return None
    return tuple(s if isinstance(s, int) else None for s in meta.shape)


def _layout(value, static):
    """(shape, contiguity, stride_order) to define `value` with: the sizes
    Dynamo fixed stay fixed (the segmenter then knows, say, that two
    reductions have different widths), the others symbolic; broadcast and
    expanded axes as the tensor has them."""
    shape, contiguity, order = _C.describe_tensor(list(value.shape), list(value.stride()))
    if static is not None:
        shape = [
            fixed if fixed is not None and described == -1 and stride != 0 else described
            for fixed, described, stride in zip(static, shape, value.stride())
        ]
    return list(shape), list(contiguity), list(order)


def _layout_key(value, layout):
    if layout is None:
        return type(value)
    shape, contiguity, order = layout
    return (
        value.dtype,
        value.device.type,
        value.dim() == 0 and value.is_cpu,
        tuple(shape),
        tuple(contiguity),
        tuple(order),
    )


def _outputs_of(graph):
    (result,) = [n for n in graph.nodes if n.op == "output"]
    value = result.args[0]
    return (list(value), False) if isinstance(value, (tuple, list)) else ([value], True)


def _with_meta_dtype(fd, value, meta):
    """`value` cast to the dtype of torch's meta value `meta`."""
    if isinstance(value, (tuple, list)):
        return tuple(_with_meta_dtype(fd, v, m) for v, m in zip(value, meta))
    if isinstance(meta, torch.Tensor):
        want = torch_dtype_to_nvfuse_dtype(meta.dtype)
        if value.dtype != want:
            return fd.ops.cast(value, want)
    return value


def _define_input(fd, value, layout):
    if layout is None:
        return fd.define_scalar(dtype=python_scalar_dtype(value))
    shape, contiguity, order = layout
    return fd.define_tensor(
        shape=shape,
        contiguity=contiguity,
        dtype=torch_dtype_to_nvfuse_dtype(value.dtype),
        is_cpu=value.is_cpu and value.dim() == 0,
        stride_order=order,
    )


def define_fusion(graph, args, layouts):
    """A FusionDefinition of `graph` (placeholders in order, then ATen
    nodes with translations) for `args`, each tensor defined with its
    `layouts` entry (_layout; None for a number)."""
    outputs, _ = _outputs_of(graph)
    placeholders = iter(zip(args, layouts))
    with FusionDefinition() as fd:
        env = {}
        for node in graph.nodes:
            if node.op == "placeholder":
                env[node] = _define_input(fd, *next(placeholders))
            elif node.op == "call_function":
                node_args, node_kwargs = map_arg((node.args, node.kwargs), lambda n: env[n])
                if node.target in NEEDS_SIZES:
                    node_kwargs = dict(node_kwargs, sizes=list(node.args[0].meta["val"].shape))
                value = TRANSLATIONS[node.target](fd, *node_args, **node_kwargs)
                env[node] = _with_meta_dtype(fd, value, node.meta.get("val"))
        for out in outputs:
            fd.add_output(env[out], stride_order=_stride_order_of(out.meta.get("val")))
    return fd


def _stride_order_of(meta):
    """The stride order of the layout torch gives the value (None for
    row-major or a layout that is not a dense permutation). ATen calls after
    the region may rely on it: the attention backward kernels read a
    gradient laid out as the forward's output was."""
    if not isinstance(meta, torch.Tensor):
        return None
    from torch.fx.experimental.symbolic_shapes import size_hint

    sizes = [size_hint(s) for s in meta.shape]
    strides = [size_hint(s) for s in meta.stride()]
    _, contiguity, order = _C.describe_tensor(sizes, strides)
    if not order or not all(c is not False for c in contiguity):
        return None
    return list(order)


class FusedRegion(torch.nn.Module):
    """Runs a partition's graph as nvfuse fusions, one definition per input
    layout."""

    def __init__(self, graph_module, name):
        super().__init__()
        self.name = name
        self.graph_module = graph_module
        _, self._single = _outputs_of(graph_module.graph)
        self._definitions = {}
        self._fusion_ids = {}
        self._static_sizes = [
            _static_sizes_of(n.meta.get("val"))
            for n in graph_module.graph.nodes
            if n.op == "placeholder"
        ]

    def definition_for(self, args):
        layouts = [
            _layout(a, s) if isinstance(a, torch.Tensor) else None
            for a, s in zip(args, self._static_sizes)
        ]
        key = tuple(_layout_key(a, layout) for a, layout in zip(args, layouts))
        fd = self._definitions.get(key)
        if fd is None:
            fd = self._definitions[key] = define_fusion(self.graph_module.graph, args, layouts)
        return fd

    def forward(self, *args):
        # Per call, the cheapest key that implies the layout (exact sizes
        # and strides); a new one costs the layout key once.
        exact = tuple(
            (a.dtype, a.device, a.shape, a.stride()) if isinstance(a, torch.Tensor) else type(a)
            for a in args
        )
        fusion_id = self._fusion_ids.get(exact)
        if fusion_id is None:
            if len(self._fusion_ids) >= 256:  # many dynamic sizes: start over
                self._fusion_ids.clear()
            fd = self.definition_for(args)
            fd._ensure_defined()
            fusion_id = self._fusion_ids[exact] = fd._id
        outputs = _C.execute(fusion_id, list(args), -1)
        return outputs[0] if self._single else tuple(outputs)

    def node_targets(self):
        return [str(n.target) for n in self.graph_module.graph.nodes if n.op == "call_function"]
