"""Splits a reduction over axes that are not adjacent in memory into
reductions that each are.

nvfuse's generated reduction kernels reduce one strided run of axes
(axes adjacent in the tensor's memory order, which merge into one). Batch
norm over an NCHW tensor reduces N, H and W around C: two runs, which no
kernel takes, so such a fusion ran op by op on the ATen reference
evaluator. Reduced run by run, innermost run first, each step is a kernel's
reduction (a row reduction over H*W, then a column reduction over N) and
the region stays generated code:

- sum, mean, amax, amin: the reduction of the reduction (a mean of equal
  counts is the mean);
- var_mean and var: the law of total variance over equal counts, which keeps
  Welford's accuracy: the mean of the inner variances plus the variance
  of the inner means; a correction rescales the population variance by
  n / (n - correction).

Reductions whose sizes are symbolic are left as they are (the count of a
correction would need a guard)."""

import operator

import torch

from .graph_edits import finish_rewrite, insert_call, insert_item

aten = torch.ops.aten

_NESTABLE = {
    aten.sum.dim_IntList: "sum",
    aten.mean.dim: "mean",
    aten.amax.default: "amax",
    aten.amin.default: "amin",
    aten.var_mean.correction: "var_mean",
    aten.var.correction: "var",
}


def memory_runs(shape, stride, dims):
    """`dims` (sorted, non-negative) grouped into runs of axes adjacent in
    the memory order of a tensor of `shape` and `stride`, innermost run
    first. Size-1 axes sit anywhere, so they never break a run."""
    order = sorted(range(len(shape)), key=lambda d: (-stride[d], -d))
    order = [d for d in order if shape[d] != 1 or d in dims]
    runs, current = [], []
    for axis in order:
        if axis in dims:
            current.append(axis)
        elif shape[axis] != 1 and current:
            runs.append(sorted(current))
            current = []
    if current:
        runs.append(sorted(current))
    return list(reversed(runs))


def _reduction_to_split(node):
    """(kind, input, runs, keepdim, kwargs) of a reduction this pass
    splits, or None."""
    kind = _NESTABLE.get(node.target)
    if node.op != "call_function" or kind is None:
        return None
    x = node.args[0]
    meta = getattr(x, "meta", {}).get("val")
    if not isinstance(meta, torch.Tensor) or meta.dim() < 2:
        return None
    if not all(isinstance(s, int) for s in (*meta.shape, *meta.stride())):
        return None
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dims is None or isinstance(dims, int) or len(dims) < 2:
        return None
    dims = sorted({d % meta.dim() for d in dims})
    runs = memory_runs(meta.shape, meta.stride(), dims)
    if len(runs) < 2:
        return None
    if kind in ("var", "var_mean") and _count(meta.shape, dims) <= _correction(node.kwargs):
        return None  # no degrees of freedom: torch's inf or nan, left to it
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    kwargs = {k: v for k, v in node.kwargs.items() if k not in ("dim", "keepdim")}
    return kind, x, runs, keepdim, kwargs


class _Builder:
    """Inserts nodes before `anchor` (graph_edits.py)."""

    def __init__(self, graph, anchor):
        self.graph, self.anchor = graph, anchor

    def call(self, target, args, kwargs=None):
        return insert_call(self.graph, self.anchor, target, args, kwargs)

    def item(self, node, index):
        return insert_item(self.graph, self.anchor, node, index)


def _nested(b, target, x, runs, kwargs):
    """`target` applied run by run (keeping the reduced axes)."""
    for run in runs:
        x = b.call(target, (x, run, True), kwargs)
        kwargs = {}  # a dtype applies once, to the first step
    return x


def _finished(b, value, dims, keepdim):
    return value if keepdim else b.call(aten.squeeze.dims, (value, dims))


def _count(shape, dims):
    count = 1
    for d in dims:
        count *= shape[d]
    return count


def _correction(kwargs):
    correction = kwargs.get("correction", 1)
    return 1 if correction is None else correction


def _split_var_mean(b, x, runs, keepdim, kwargs):
    correction = _correction(kwargs)
    shape = x.meta["val"].shape
    inner, outer = runs[0], [d for run in runs[1:] for d in run]
    pair = b.call(aten.var_mean.correction, (x, inner), {"correction": 0, "keepdim": True})
    inner_var, inner_mean = b.item(pair, 0), b.item(pair, 1)
    pair = b.call(aten.var_mean.correction, (inner_mean, outer), {"correction": 0, "keepdim": True})
    var_of_means, mean = b.item(pair, 0), b.item(pair, 1)
    mean_of_vars = b.call(aten.mean.dim, (inner_var, outer, True))
    var = b.call(aten.add.Tensor, (mean_of_vars, var_of_means))
    if correction:
        var = b.call(
            aten.mul.Tensor,
            (var, _count(shape, inner + outer) / (_count(shape, inner + outer) - correction)),
        )
    dims = sorted(inner + outer)
    return _finished(b, var, dims, keepdim), _finished(b, mean, dims, keepdim)


def node_dtype(node):
    """The dtype of a reduction's value (var_mean's pair: its first)."""
    value = node.meta["val"]
    return (value[0] if isinstance(value, (tuple, list)) else value).dtype


def split_reductions(gm):
    """Splits `gm`'s reductions over axes that are not adjacent in memory
    (see the module's doc); returns how many it split."""
    split = 0
    for node in list(gm.graph.nodes):
        found = _reduction_to_split(node)
        if found is None:
            continue
        kind, x, runs, keepdim, kwargs = found
        b = _Builder(gm.graph, node)
        dims = sorted(d for run in runs for d in run)
        # Half-precision partial results would be rounded between the
        # steps; torch rounds its float accumulation once, and so do these.
        dtype = x.meta["val"].dtype
        widened = dtype in (torch.float16, torch.bfloat16) and kind not in ("amax", "amin")
        if widened and kwargs.get("dtype") is None:
            x = b.call(aten._to_copy.default, (x,), {"dtype": torch.float32})

        def rounded(value):
            if not widened or value.meta["val"].dtype == node_dtype(node):
                return value
            return b.call(aten._to_copy.default, (value,), {"dtype": node_dtype(node)})

        if kind == "var":
            var, _ = _split_var_mean(b, x, runs, keepdim, kwargs)
            node.replace_all_uses_with(rounded(var))
        elif kind == "var_mean":
            var, mean = (rounded(v) for v in _split_var_mean(b, x, runs, keepdim, kwargs))
            for user in list(node.users):
                if user.target is operator.getitem:
                    user.replace_all_uses_with(var if user.args[1] == 0 else mean)
                    gm.graph.erase_node(user)
        else:
            value = _finished(b, _nested(b, node.target, x, runs, kwargs), dims, keepdim)
            node.replace_all_uses_with(rounded(value))
        gm.graph.erase_node(node)
        split += 1
    return finish_rewrite(gm, split)
