"""Pads GEMMs whose leading dimensions cuBLAS cannot read aligned.

cuBLAS picks its fast tensor-core kernels only when every matrix's
leading dimension (and base address) is a multiple of 16 bytes. A
language model's head against an odd vocabulary (GPT-2's 50,257 words,
BERT's 30,522) breaks that: the logits' rows are 50,257 elements apart,
and cuBLAS falls back to kernels that read one element at a time, five
to eight times slower. Inductor pads such GEMMs too (its pad_mm pass).

For `mm(a, b)` and `addmm(bias, a, b)` on a CUDA device with a = [M, K],
b = [K, N], this pass pads, with zeros, the dimensions that make a
leading dimension unaligned, computes the padded product and slices the
result back to [M, N]:

- N when the result's rows (N apart) are unaligned; b (and a bias) get
  zero columns;
- K when a row-major `a` or a column-major `b` has rows K apart; both
  operands get zero K-slices, which add nothing to the sum;
- M when a column-major `a` (a transposed activation, in a backward)
  has columns M apart.

Each padded operand keeps its memory order, so a transposed weight stays
the transposed view cuBLAS reads without copying. A padded copy is made
by the grouped layout copy's kernel (weight_layouts.copy_into_padded),
which writes the zeros past the operand's extent itself, walking rows; an operand
padded along both axes takes a one-op nvfuse region. On an H200, GPT-2's
8,192 x 50,257 bf16 logits' gradient padded in 1.16 ms by ATen's pad (a
fill of the whole result, then a copy into a strided slice of it), 1.09
ms by Inductor's, 0.43 ms by the grouped copy. The dense copy of a padded
result (below) is the grouped layout copy too
(weight_layouts.copy_into_layouts; benchmarks/test_layout_copies.py,
8,192 bf16 rows on an H200: 0.28 ms for BERT's 30,522 columns and 0.46 ms
for GPT-2's 50,257, against ATen's clone's 0.56 and 0.93 ms and
Inductor's 0.23 and 0.76). Only GEMMs of at least
PADDED_GEMM_MIN_FLOPS are padded: below that the copies cost more than the
unaligned kernel loses.

A result padded along N has rows Np apart. nvfuse regions read any
layout, so a region (directly, or through a view that splits M) reads
the padded result in place; every other user (an ATen op, the graph's
output) reads one dense copy, which is what torch's meta value promises
them."""

import torch

from ..region import FusedRegion
from .graph_edits import RESHAPING_VIEWS, finish_rewrite, insert_call
from .regions import one_op_region
from .weight_layouts import copied_together

aten = torch.ops.aten

PADDED_GEMM_MIN_FLOPS = 1 << 30
_ALIGNMENT_BYTES = 16
_PADDED_TARGETS = (aten.mm.default, aten.addmm.default)
_SPLITTING_VIEWS = RESHAPING_VIEWS | {aten.reshape.default}


def padded_gemm(bias, a, b, rows, cols):
    """`bias + a @ b` (no bias when `bias` is None) of zero-padded operands,
    sliced back to [rows, cols]; a bias is padded to b's columns."""
    if bias is None:
        out = torch.mm(a, b)
    else:
        pad = b.shape[1] - bias.shape[-1]
        out = torch.addmm(torch.nn.functional.pad(bias, (0, pad)) if pad else bias, a, b)
    return out[:rows, :cols]


def _is_column_major(shape, stride):
    return stride[0] == 1 and shape[1] > 1 and stride[1] != 1


def _aligned(size, itemsize):
    return (size * itemsize) % _ALIGNMENT_BYTES == 0


def aligned_size(size, itemsize):
    """`size` elements of `itemsize` bytes rounded up to the alignment
    cuBLAS's tensor-core kernels need of a leading dimension."""
    step = _ALIGNMENT_BYTES // itemsize
    return -(-size // step) * step


def padded_sizes(a, b):
    """(M, K, N) padded where the GEMM of the meta values `a` = [M, K] and
    `b` = [K, N] needs it, or None when every leading dimension is
    aligned."""
    (m, k), n = a.shape, b.shape[1]
    itemsize = a.element_size()
    a_column_major = _is_column_major(a.shape, a.stride())
    b_column_major = _is_column_major(b.shape, b.stride())
    pad_m = a_column_major and not _aligned(m, itemsize)
    pad_k = not _aligned(k, itemsize) and (not a_column_major or b_column_major)
    pad_n = not _aligned(n, itemsize)
    if not (pad_m or pad_k or pad_n):
        return None
    return tuple(
        aligned_size(size, itemsize) if pad else size
        for size, pad in ((m, pad_m), (k, pad_k), (n, pad_n))
    )


def _gemm_to_pad(node, devices, min_flops):
    """(bias, a, b, padded sizes) of a GEMM node this pass pads, or None."""
    if node.op != "call_function" or node.target not in _PADDED_TARGETS:
        return None
    if node.target is aten.addmm.default:
        if node.kwargs:  # beta and alpha: rare, left as they are
            return None
        bias, a, b = node.args
    else:
        (a, b), bias = node.args, None
    out = node.meta.get("val")
    metas = [getattr(x, "meta", {}).get("val") for x in (a, b)]
    if not isinstance(out, torch.Tensor) or not all(isinstance(v, torch.Tensor) for v in metas):
        return None
    if out.device.type not in devices or out.dtype not in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
    ):
        return None
    (m, k), n = metas[0].shape, metas[1].shape[1]
    if not all(isinstance(size, int) for size in (m, k, n)):  # symbolic: no guards now
        return None
    if 2 * m * k * n < min_flops:
        return None
    sizes = padded_sizes(*metas)
    return None if sizes is None else (bias, a, b, sizes)


def is_padded(node):
    """Whether pad_unaligned_gemms, run as the backend runs it, pads the
    GEMM `node`."""
    return _gemm_to_pad(node, ("cuda",), PADDED_GEMM_MIN_FLOPS) is not None


def pad_unaligned_gemms(
    gm, devices=("cuda",), min_flops=PADDED_GEMM_MIN_FLOPS, user_outputs=frozenset()
):
    """Pads `gm`'s unaligned GEMMs of at least `min_flops` on `devices`
    (see the module's doc); returns how many it padded. `user_outputs`:
    the positions among the graph's outputs that only the user reads
    (graph_outputs.user_only_outputs), which get the padded rows too."""
    readers = _PaddedRowReaders(gm, user_outputs)
    padded = 0
    pads = {}  # one padded copy per operand and size, shared by its GEMMs
    for node in list(gm.graph.nodes):
        found = _gemm_to_pad(node, devices, min_flops)
        if found is None:
            continue
        bias, a, b, (m, k, n) = found
        a = _padded_node(gm, node, a, m, k, pads)
        b = _padded_node(gm, node, b, k, n, pads)
        rows, cols = node.meta["val"].shape
        with gm.graph.inserting_after(node):
            gemm = gm.graph.call_function(padded_gemm, (bias, a, b, rows, cols))
        gemm.meta["val"] = node.meta["val"]
        _route_users(gm, node, gemm, readers if n != cols else None)
        gm.graph.erase_node(node)
        padded += 1
    return finish_rewrite(gm, padded)


def _padded_node(gm, anchor, x, rows, cols, pads):
    """A node (before `anchor`) of `x` padded to [rows, cols]. A transposed
    view pads its base, so that a GEMM of t(g) and another of g share one
    padded copy of g (the weight and input gradients of an LM head both
    read the logits' gradient)."""
    if tuple(x.meta["val"].shape) == (rows, cols):
        return x
    base, transposed = _transposed_base(x)
    key = (base, cols, rows) if transposed else (x, rows, cols)
    if key not in pads:
        pads[key] = _padded_copy(gm, anchor, *key)
    if not transposed:
        return pads[key]
    return insert_call(gm.graph, anchor, aten.t.default, (pads[key],))


def _padded_copy(gm, anchor, x, rows, cols):
    """`x` padded with zeros to [rows, cols], in `x`'s memory order: by the
    grouped copy where one axis grows, else by a one-op region (a
    column-major `x` pads its row-major transpose)."""
    meta = x.meta["val"]
    column_major = _is_column_major(meta.shape, meta.stride())
    if (rows, cols) != tuple(meta.shape) and (rows == meta.shape[0] or cols == meta.shape[1]):
        strides = [1, rows] if column_major else [cols, 1]
        (copy,) = copied_together(gm.graph, anchor, [x], [strides], sizes=[[rows, cols]])
        return copy
    if column_major:
        base = insert_call(gm.graph, anchor, aten.t.default, (x,))
        return insert_call(
            gm.graph, anchor, aten.t.default, (_padded_copy(gm, anchor, base, cols, rows),)
        )
    extra_rows, extra_cols = rows - meta.shape[0], cols - meta.shape[1]
    return one_op_region(
        gm, anchor, aten.constant_pad_nd.default, x, ([0, extra_cols, 0, extra_rows], 0.0)
    )


def _transposed_base(x):
    """(base, True) when `x` is t(base) or permute(base, [1, 0]), else
    (x, False)."""
    if x.op == "call_function" and (
        x.target is aten.t.default
        or (x.target is aten.permute.default and list(x.args[1]) == [1, 0])
    ):
        return x.args[0], True
    return x, False


def _route_users(gm, old, padded, readers):
    """Moves `old`'s users onto `padded`, through one dense copy for the
    users that cannot read padded rows (`readers` says which can; None:
    the rows are not padded, every user can)."""
    dense = None
    for user in list(old.users):
        if readers is None or readers.read_padded_rows(user, old):
            user.replace_input_with(old, padded)
            continue
        if dense is None:
            meta = old.meta["val"]
            (dense,) = copied_together(gm.graph, padded.next, [padded], [list(meta.stride())])
        user.replace_input_with(old, dense)


class _PaddedRowReaders:
    """Which users of an [M, N] value read it with padded rows: a region
    does; the graph's output does where it hands the value to the user
    alone (as Inductor's padded GEMMs do, the user then sees rows N_padded
    apart; a saved activation, read by the backward's ATen views, stays
    dense); and so does a view that splits M whose users all do."""

    def __init__(self, gm, user_outputs):
        self._gm = gm
        self._user_outputs = user_outputs

    def read_padded_rows(self, user, value):
        if user.op == "call_module":
            return isinstance(getattr(self._gm, user.target, None), FusedRegion)
        if user.op == "output":
            outputs = user.args[0] if isinstance(user.args[0], (tuple, list)) else [user.args[0]]
            at = {k for k, out in enumerate(outputs) if out is value}
            return bool(at) and at <= self._user_outputs
        if user.op != "call_function" or user.target not in _SPLITTING_VIEWS:
            return False
        shape = user.args[1]
        keeps_rows = len(shape) >= 2 and shape[-1] == value.meta["val"].shape[-1]
        return keeps_rows and all(self.read_padded_rows(u, user) for u in user.users)
