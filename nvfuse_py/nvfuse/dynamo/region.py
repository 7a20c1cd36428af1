"""One fused region of an FX graph, run by nvfuse.

The region's graph becomes a FusionDefinition the first time it runs
with a given input layout (dtypes, which axes are size 1, contiguity and
stride order). The sizes Dynamo fixed for the graph are fixed in the
definition; those it made symbolic (dynamic batch or sequence) stay
symbolic, so a new size reuses the definition. The fusion cache shares a
definition between graphs of the same structure. Python numbers among the
inputs (Dynamo's symbolic sizes) become symbolic scalars.

What the region returns keeps torch's contract (layouts.py): each output
has its meta value's stride order, and an input update (copy_ into a
graph input) writes the input in place and returns the input itself."""

import torch
from torch.fx.node import map_arg

from .. import _C
from ..fusion_definition import FusionDefinition
from ..pytorch_utils import python_scalar_dtype, torch_dtype_to_nvfuse_dtype
from .layouts import OutputLayout, input_layout, layout_key, static_sizes_of, stride_order_of
from .passes.in_place_updates import is_input_update
from .translate import VIEWS, translate_node


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


# Copies whose result is only read inside the fusion are their input there:
# an intermediate's memory layout is the fusion's to choose, and a copy
# kept as a `set` is a copy kernel of its own, which also keeps a permute
# of its result from being a zero-copy view (ConvNeXt's blocks cloned each
# MLP output, copied it, permuted the copy in another kernel, then
# scaled it).
COPIES = {
    torch.ops.aten.clone.default,
    torch.ops.aten.alias.default,
    torch.ops.aten.lift_fresh_copy.default,
}


def _is_inner_copy(node, outputs):
    return node.target in COPIES and node not in outputs and len(node.args) == 1


# Ops that read a number as torch reads a 0-d tensor operand: a 0-d tensor
# does not promote a dimensioned operand of its kind, and a number does not
# either (where's value operands, not its condition).
_NUMBER_READERS = {
    torch.ops.aten.add.Tensor: (0, 1),
    torch.ops.aten.sub.Tensor: (0, 1),
    torch.ops.aten.mul.Tensor: (0, 1),
    torch.ops.aten.div.Tensor: (0, 1),
    torch.ops.aten.where.self: (1, 2),
}


def _is_scalar_tensor(value):
    return isinstance(value, torch.fx.Node) and value.target is torch.ops.aten.scalar_tensor.default


def _reads_as_number(user, node):
    """Whether `user` reads `node` only as a value operand beside a tensor
    (an op of numbers alone would make a number, not the 0-d tensor torch
    gives)."""
    if (
        user.op != "call_function"
        or user.target not in _NUMBER_READERS
        or node in user.kwargs.values()
    ):
        return False
    positions = _NUMBER_READERS[user.target]
    read_at = [k for k, arg in enumerate(user.args) if arg is node]
    beside_tensor = any(
        isinstance(arg, torch.fx.Node) and not _is_scalar_tensor(arg) for arg in user.args
    )
    return all(k in positions for k in read_at) and beside_tensor


def _is_operand_number(node, outputs):
    """A scalar_tensor that only pointwise ops read as a value operand: the
    number it holds. As a 0-d tensor it became a `full` cut into a kernel
    of its own next to reductions (a launch per where of a decomposed
    loss); as a number it is a constant of the kernel that reads it."""
    if not _is_scalar_tensor(node) or node in outputs:
        return False
    return bool(node.users) and all(_reads_as_number(user, node) for user in node.users)


def define_fusion(graph, args, layouts):
    """A FusionDefinition of `graph` (placeholders in order, then ATen
    nodes with translations) for `args`, each tensor defined with its
    `layouts` entry (layouts.input_layout; None for a number). Input
    updates become outputs written into their input; the others are
    outputs in their meta value's stride order. Copies read only inside
    the fusion are their input (COPIES), and scalar tensors that pointwise
    ops read are numbers (_is_operand_number)."""
    outputs, _ = _outputs_of(graph)
    placeholders = iter(zip(args, layouts))
    with FusionDefinition() as fd:
        env = {}
        for node in graph.nodes:
            if node.op == "placeholder":
                env[node] = _define_input(fd, *next(placeholders))
            elif node.op == "call_function" and _is_inner_copy(node, outputs):
                env[node] = env[node.args[0]]
            elif node.op == "call_function" and _is_operand_number(node, outputs):
                env[node] = node.args[0]
            elif node.op == "call_function":
                node_args, node_kwargs = map_arg((node.args, node.kwargs), lambda n: env[n])
                value = translate_node(fd, node, node_args, node_kwargs)
                env[node] = _with_meta_dtype(fd, value, node.meta.get("val"))
        for node in graph.nodes:
            if is_input_update(node):
                # Laid out as the input it is written into (a channels-last
                # convolution's result): the kernel writes in place only
                # where the two layouts agree.
                fd.add_output(
                    env[node],
                    alias_input=env[node.args[0]],
                    stride_order=stride_order_of(node.args[0].meta.get("val")),
                )
        for out in outputs:
            if not is_input_update(out):
                fd.add_output(env[out], stride_order=stride_order_of(out.meta.get("val")))
    return fd


def _cuda_device_of(outputs):
    """The index of the CUDA device the outputs' meta values are on, or -1
    (the CPU)."""
    for out in outputs:
        meta = out.meta.get("val")
        if isinstance(meta, torch.Tensor) and meta.device.type == "cuda":
            return meta.device.index if meta.device.index is not None else 0
    return -1


def _shares_an_input(value, args):
    """Whether output `value` is in the memory of one of the inputs: a copy
    the fusion ran as its source (`aten.copy` of an input into a fresh
    tensor, an expand or cast that changes nothing) returns the input
    itself, where torch promised a fresh tensor that the caller, or the
    backward as a donated buffer, may write."""
    if not isinstance(value, torch.Tensor) or value.numel() == 0:
        return False
    storage = value.untyped_storage().data_ptr()
    return any(
        isinstance(a, torch.Tensor) and a.numel() > 0 and a.untyped_storage().data_ptr() == storage
        for a in args
    )


class FusedRegion(torch.nn.Module):
    """Runs a region's graph as nvfuse fusions, one definition per input
    layout."""

    def __init__(self, graph_module, name):
        super().__init__()
        self.name = name
        self.graph_module = graph_module
        outputs, self._single = _outputs_of(graph_module.graph)
        placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
        # Per output: ("fused", k), the fusion's k-th output, or ("input",
        # i), the i-th input, updated in place.
        fused = iter(range(len(outputs)))
        self._returns = [
            ("input", placeholders.index(out.args[0]))
            if is_input_update(out)
            else ("fused", next(fused))
            for out in outputs
        ]
        self._layouts = [
            OutputLayout(out.meta.get("val")) for out in outputs if not is_input_update(out)
        ]
        # Per fused output: whether the graph makes it a view (of an input,
        # possibly), which the fusion may return as one.
        self._views = [out.target in VIEWS for out in outputs if not is_input_update(out)]
        # Where a fusion that reads no CUDA tensor runs (creation ops only,
        # say arange and full for an attention bias): the device torch's
        # meta values put the outputs on.
        self._cuda_device = _cuda_device_of(outputs)
        # Input updates make the region's call impure: never dead code.
        self._is_impure = any(is_input_update(n) for n in graph_module.graph.nodes)
        self._returns_inputs = any(kind == "input" for kind, _ in self._returns)
        self._definitions = {}
        self._calls = {}
        self._static_sizes = [static_sizes_of(n.meta.get("val")) for n in placeholders]

    def definition_for(self, args):
        layouts = [
            input_layout(a, s) if isinstance(a, torch.Tensor) else None
            for a, s in zip(args, self._static_sizes)
        ]
        key = tuple(layout_key(a, layout) for a, layout in zip(args, layouts))
        fd = self._definitions.get(key)
        if fd is None:
            fd = self._definitions[key] = define_fusion(self.graph_module.graph, args, layouts)
        return fd

    def forward(self, *args):
        # Per call, the cheapest key that implies the layout (exact dtypes,
        # devices, sizes and strides, as bytes built in C++: a tuple of
        # them built in Python, and its hash, took 1.9 us for five tensors
        # on a CPU-only host, the bytes 0.5); a new one costs the layout key
        # once, and its first run says which outputs need copying into the
        # promised layout.
        exact = _C.call_signature(args)
        call = self._calls.get(exact)
        if call is None:
            if len(self._calls) >= 256:  # many dynamic sizes: start over
                self._calls.clear()
            fd = self.definition_for(args)
            fd._ensure_defined()
            outputs = _C.execute(fd._id, list(args), self._cuda_device)
            to_conform = [
                k
                for k, (out, layout) in enumerate(zip(outputs, self._layouts))
                if not layout.accepts(out) or (not self._views[k] and _shares_an_input(out, args))
            ]
            call = self._calls[exact] = (fd._id, to_conform)
        else:
            outputs = _C.execute(call[0], list(args), self._cuda_device)
        for k in call[1]:
            outputs[k] = self._layouts[k].conform(outputs[k])
        if self._returns_inputs:
            outputs = [outputs[k] if kind == "fused" else args[k] for kind, k in self._returns]
        return outputs[0] if self._single else tuple(outputs)

    def __call__(self, *args):
        # The graph's code calls each region once a step: straight to
        # forward, without nn.Module.__call__'s hook checks (no one
        # registers hooks on a region). Those took 1.6 of the 6.0 us a
        # region call cost the host besides `_C.execute` (CPU-only
        # development host); a ResNet-50 training step makes 98 region
        # calls.
        return self.forward(*args)

    def node_targets(self):
        return [str(n.target) for n in self.graph_module.graph.nodes if n.op == "call_function"]
