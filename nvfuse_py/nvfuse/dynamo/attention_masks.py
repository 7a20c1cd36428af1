"""Attention masks that mask nothing, or only what causality would, are
dropped from the attention call on Dynamo's graph, before AOTAutograd.

Under torch.compile, transformers cannot look at a mask's values to skip
it, so an encoder called without a padding mask (ViT, a BERT without
`attention_mask`) gets a boolean mask built from `arange(n) >= 0`, true
everywhere, and a decoder may get the causal triangle built the same way.
Such a mask is a constant: nothing it is computed from is an input of the
graph. With it, torch's attention takes a masked kernel, and converts the
boolean mask into an additive one of the scores' size (a kernel of its
own in every layer); without it, the flash or cuDNN kernel that eager
runs for the same model.

So a mask computed from no graph input, no module state and nothing
random is evaluated once, here, on its device. Where every element
admits its key (true, or an additive 0), the call gets no mask; where the
elements admit exactly the keys at or before the query's position of a
square score matrix, it gets is_causal=True instead. The results are
torch's for the same call without the mask (a masked-out score adds the
mask's large negative number, or -inf: either gives the key no weight).
Masks over MAX_EVALUATED_ELEMENTS elements, or whose nodes are not all
plain functions of constants, stay as they are."""

import operator

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from .attention_backends import attention_arguments, is_attention_call
from .example_values import example_tensor

MAX_EVALUATED_ELEMENTS = 1 << 26

# Targets whose values are not a function of their arguments: random
# draws, and uninitialized memory.
_NOT_CONSTANT_WORDS = ("rand", "dropout", "bernoulli", "normal", "uniform", "multinomial", "empty")
# Ops whose result may share its input's memory (reshape and flatten may).
_VIEWS = {
    "getitem",
    "__getitem__",
    "view",
    "view_as",
    "reshape",
    "expand",
    "expand_as",
    "permute",
    "transpose",
    "t",
    "unsqueeze",
    "squeeze",
    "select",
    "narrow",
    "as_strided",
    "flatten",
    "unflatten",
    "split",
    "chunk",
    "unbind",
    "movedim",
    "swapaxes",
    "diagonal",
    "detach",
    "alias",
}
_IN_PLACE_OPERATORS = {
    operator.iadd,
    operator.isub,
    operator.imul,
    operator.itruediv,
    operator.ifloordiv,
    operator.imod,
    operator.ipow,
    operator.iand,
    operator.ior,
    operator.ixor,
    operator.ilshift,
    operator.irshift,
}


def drop_constant_masks(gm):
    """Drops the constant attention masks of gm's attention calls (see the
    module); the number of calls changed."""
    changed = 0
    for node in list(gm.graph.nodes):
        if is_attention_call(node):
            changed += _drop_mask_of(gm, node)
    if changed:
        gm.graph.lint()
        gm.recompile()
    return changed


def _drop_mask_of(gm, call):
    arguments = attention_arguments(call)
    if arguments is None or arguments.get("is_causal", False) is not False:
        return 0
    mask = arguments.get("attn_mask")
    if not isinstance(mask, torch.fx.Node):
        return 0
    constant_nodes = _constant_ancestors(mask)
    if constant_nodes is None:
        return 0
    value = _evaluate(gm, constant_nodes, mask)
    if value is None:
        return 0
    if _admits_every_key(value):
        _set_mask(call, arguments, causal=False)
    elif _admits_causal_keys(value):
        _set_mask(call, arguments, causal=True)
    else:
        return 0
    _erase_unused(gm.graph, constant_nodes)
    return 1


def _set_mask(call, arguments, causal):
    """The call without its mask, causal or not: query, key and value
    positional, the rest by name."""
    kwargs = dict(arguments, attn_mask=None, is_causal=causal)
    call.args = tuple(kwargs.pop(name) for name in ("query", "key", "value"))
    call.kwargs = kwargs


def _target_name(node):
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _updates_in_place(node):
    """Whether `node` writes into a tensor it is given: `out=`, an in-place
    operator (`iand`; `and_` is not one), or a method or function whose
    name ends in an underscore (`fill_`, `masked_fill_`; not `__getitem__`)."""
    if "out" in node.kwargs:
        return True
    if getattr(node.target, "__module__", None) == "_operator":
        return node.target in _IN_PLACE_OPERATORS
    name = _target_name(node)
    return name.endswith("_") and not name.startswith("__")


def _is_constant_op(node):
    if node.op not in ("call_function", "call_method"):
        return False  # inputs, module state and submodules vary
    name = _target_name(node).lower()
    return not any(word in name for word in _NOT_CONSTANT_WORDS) and not _updates_in_place(node)


def _constant_ancestors(mask):
    """The nodes `mask` is computed from, in graph order, when each is a
    plain function of constants and none is updated in place, through a
    view or not; else None."""
    seen, stack = {}, [mask]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        if not _is_constant_op(node):
            return None
        seen[node] = True
        stack.extend(node.all_input_nodes)
    if _written_through_views(seen):
        return None
    order = {n: i for i, n in enumerate(mask.graph.nodes)}
    return sorted(seen, key=order.__getitem__)


def _written_through_views(nodes):
    """Whether a node updates in place one of `nodes`, or a view of one
    (an in-place fill of a slice of the tensor a mask is read from, after
    the mask's nodes): evaluating the nodes alone would not see it."""
    stack, seen = list(nodes), set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for user in node.users:
            if user.op == "output":
                continue
            if _updates_in_place(user):
                return True
            if _target_name(user) in _VIEWS:
                stack.append(user)
    return False


def _evaluate(gm, nodes, mask):
    example = example_tensor(mask)
    if example is None or example.numel() > MAX_EVALUATED_ELEMENTS:
        return None
    graph = torch.fx.Graph()
    copies = {}
    for node in nodes:
        copies[node] = graph.node_copy(node, lambda n: copies[n])
    graph.output(copies[mask])
    try:
        with unset_fake_temporarily():
            value = torch.fx.GraphModule(gm, graph)()
    except Exception:  # noqa: BLE001 (a mask that does not evaluate stays as it is)
        return None
    return value if isinstance(value, torch.Tensor) and value.dim() >= 2 else None


def _admits_every_key(mask):
    if mask.dtype == torch.bool:
        return bool(mask.all())
    return bool((mask == 0).all())


def _causal_admitted(mask):
    rows, cols = mask.shape[-2:]
    return torch.ones(rows, cols, dtype=torch.bool, device=mask.device).tril()


def _admits_causal_keys(mask):
    """Admitted exactly at and below the diagonal of a square score
    matrix; what it adds above it masks the key out (at most half the
    type's lowest value, or -inf)."""
    rows, cols = mask.shape[-2:]
    if rows != cols or rows < 2:
        return False
    causal = _causal_admitted(mask)
    if mask.dtype == torch.bool:
        return bool((mask == causal).all())
    masked_out = mask <= torch.finfo(mask.dtype).min / 2
    return bool(((mask == 0) == causal).all()) and bool((masked_out == ~causal).all())


def _erase_unused(graph, nodes):
    for node in reversed(nodes):
        if not node.users:
            graph.erase_node(node)
