"""Small edits the passes make to an ATen graph, each new node with the
meta value (a fake tensor) later passes and the regions read, and the
node kinds more than one pass asks about."""

import contextlib
import contextvars
import operator

import torch

aten = torch.ops.aten

# Views that reshape a tensor (FX graphs from AOTAutograd spell reshape so).
RESHAPING_VIEWS = {aten.view.default, aten._unsafe_view.default}
_CASTS = {aten._to_copy.default, torch.ops.prims.convert_element_type.default}
# Tensor arithmetic of two operands, which the passes move views and
# gathers through.
ARITHMETIC = {aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor}
# An [N, C, H, W] image's axes in channels-last memory order, and back.
NHWC = [0, 2, 3, 1]
NCHW_OF_NHWC = [0, 3, 1, 2]


def is_plain_cast(node):
    """Whether `node` only changes its operand's dtype: a _to_copy that
    names no other device, layout or memory format than its operand's
    (AOTAutograd's backward spells the cast back to a parameter's dtype
    with the strided layout and the device it already has)."""
    if node.op != "call_function" or node.target not in _CASTS:
        return False
    if node.target is not aten._to_copy.default:
        return True
    if not set(node.kwargs) <= {"dtype", "layout", "device"}:
        return False
    operand = meta_of(node.args[0])
    device = node.kwargs.get("device")
    return node.kwargs.get("layout", torch.strided) == torch.strided and (
        device is None or (operand is not None and torch.device(device) == operand.device)
    )


def meta_of(value):
    """The meta value of a node, or None for a number or a node without one."""
    return value.meta.get("val") if isinstance(value, torch.fx.Node) else None


def has_static_layout(value):
    """Whether `value` is a tensor whose sizes and strides are all ints
    (none symbolic)."""
    return isinstance(value, torch.Tensor) and all(
        isinstance(n, int) for n in (*value.shape, *value.stride())
    )


def same_tensor_layout(a, b):
    """Whether tensors (meta values) `a` and `b` have the same sizes,
    strides and dtype: a rewrite that keeps them changes nothing a later
    node reads."""
    return a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype


def call_meta(target, args, kwargs=None, fake_like=None):
    """The meta value a call of `target` on `args` and `kwargs` (nodes
    among them) would have, computed from its operands' without adding
    the call: a pass decides on it before it edits. A call without tensor
    operands (a creation op) computes it in the fake mode of `fake_like`,
    a meta value, so that it is fake too (and on the graph's device
    without touching it)."""
    metas = torch.fx.node.map_arg((args, kwargs or {}), lambda n: n.meta["val"])
    mode = getattr(fake_like, "fake_mode", None)
    if mode is None:
        return target(*metas[0], **metas[1])
    with mode:
        return target(*metas[0], **metas[1])


def insert_call(graph, anchor, target, args, kwargs=None, fake_like=None):
    """A call of `target` inserted before `anchor`, with its meta value
    (call_meta)."""
    kwargs = kwargs or {}
    with graph.inserting_before(anchor):
        node = graph.call_function(target, args, kwargs)
    node.meta["val"] = call_meta(target, args, kwargs, fake_like)
    return node


def apply_before_cast(graph, node):
    """Rewrites `node`, an op of a cast only it reads (op(cast(x), ...)),
    as the cast of the op (cast(op(x, ...))), each with its own other
    arguments; both old nodes go."""
    cast = node.args[0]
    moved = insert_call(graph, node, node.target, (cast.args[0], *node.args[1:]), dict(node.kwargs))
    rounded = insert_call(graph, node, cast.target, (moved, *cast.args[1:]), dict(cast.kwargs))
    node.replace_all_uses_with(rounded)
    graph.erase_node(node)
    graph.erase_node(cast)


def insert_item(graph, anchor, node, index):
    """`node[index]` (a value of a multi-valued op) inserted before `anchor`."""
    with graph.inserting_before(anchor):
        item = graph.call_function(operator.getitem, (node, index))
    item.meta["val"] = node.meta["val"][index]
    return item


# Whether finish_rewrite leaves the graph's Python code to be generated
# later (recompiles_deferred).
_RECOMPILES_DEFERRED = contextvars.ContextVar("nvfuse_recompiles_deferred", default=False)


@contextlib.contextmanager
def recompiles_deferred():
    """Within it, finish_rewrite checks each rewritten graph but does not
    regenerate its Python code: the pipeline's passes read and edit the
    graph, never run its code, and the pipeline generates the code once
    after the last of them. FX's code generation after each of the ~18
    rewrites of a ResNet-50 training step's two graphs took about 0.6 s
    of their compile on a 2-core host."""
    token = _RECOMPILES_DEFERRED.set(True)
    try:
        yield
    finally:
        _RECOMPILES_DEFERRED.reset(token)


def finish_rewrite(gm, edits):
    """`edits`, after checking and recompiling `gm` when there were any
    (recompiling unless deferred: recompiles_deferred): the end of every
    rewriting pass."""
    if edits:
        gm.graph.lint()
        if not _RECOMPILES_DEFERRED.get():
            gm.recompile()
    return edits


def computed_in_a_region(x):
    """Whether a region would compute node `x`, looking through views to
    the value they view: false for a graph input or an ATen op's result
    (a region reads those, and a view of them there is a host view)."""
    from ..support import why_not_fusible  # support reads the passes

    while x.op == "call_function" and x.target in RESHAPING_VIEWS:
        x = x.args[0]
    return why_not_fusible(x) is None


def _items_of(node):
    """The getitem users of a multi-valued node, by index."""
    return {
        user.args[1]: user
        for user in node.users
        if user.op == "call_function" and user.target is operator.getitem
    }


def rewrite_convolutions(gm, applies, rewrite_forward, rewrite_backward):
    """Rewrites each convolution of `gm` for which `applies(node, 0)` holds
    with `rewrite_forward(graph, node)`, and each convolution_backward for
    which `applies(node, 1)` holds (its image is argument 1) with
    `rewrite_backward`; each says whether it rewrote. Dead nodes go; True
    when the graph changed."""
    aten = torch.ops.aten
    edits = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target is aten.convolution.default and applies(node, 0):
            edits.append(rewrite_forward(gm.graph, node))
        elif node.target is aten.convolution_backward.default and applies(node, 1):
            edits.append(rewrite_backward(gm.graph, node))
    if any(edits):
        gm.graph.eliminate_dead_code()
    return finish_rewrite(gm, any(edits))


def wanted_gradients(node):
    """A convolution_backward's items the graph reads and its output mask
    asks for, by index (0 the image's gradient, 1 the weight's, 2 the
    bias's)."""
    items = _items_of(node)
    mask = node.args[10]
    return {k: items[k] for k in range(3) if mask[k] and k in items}


def insert_matmul(graph, anchor, rows, weight_t, bias=None):
    """`rows @ weight_t`, plus `bias` broadcast over the rows where given
    (addmm), inserted before `anchor`."""
    aten = torch.ops.aten
    if bias is None:
        return insert_call(graph, anchor, aten.mm.default, (rows, weight_t))
    return insert_call(graph, anchor, aten.addmm.default, (bias, rows, weight_t))
