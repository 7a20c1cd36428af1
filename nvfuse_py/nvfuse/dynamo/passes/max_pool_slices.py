"""2-D max pooling whose indices nothing reads (an inference step) as
pointwise work nvfuse fuses: the input padded with -inf read through one
strided slice per window position, and their NaN-propagating maximum.
Where nothing reads the indices, nothing computes them either: a window
position's inside test and the selects that follow ATen's tie and
padding rules (below) would cost the kernel more than its loads.

ATen's channels-last max pool writes int64 indices even where nothing
reads them, and took longer than the convolution before it in ResNet-50's
inference step. Here the pooling joins the batch norm and ReLU that feed
it in one coordinate kernel, which never writes their full-size result.
The pass runs after the channels-last pass, on the layout that pass
chose: a channels-last input is pooled as (n, h, w, c) and permuted back,
so the kernel's lanes run along the channels, adjacent in memory.

Where the indices are read (a training step's backward,
max_pool2d_with_indices_backward) the pooling stays ATen's: measured on
ResNet-50's stem, the padded copy, the pooling kernel and the int64
indices it writes took longer than ATen's one kernel. pool_window still
computes them, as ATen's CUDA kernels do, for tests and later use.

Torch's semantics, as ATen's CUDA kernels compute them: padding is never
a candidate; the first maximum in window order wins a tie; a NaN wins
over any number and a later NaN over an earlier one; a window of only
-inf returns -inf and the index of its first element inside the input.
The indices are flat positions in each (n, c) plane, as
max_pool2d_with_indices_backward (which stays ATen) reads them.
`ceil_mode`, inputs that are not 4-D, empty ones and symbolic sizes keep
ATen's op too."""

import operator
from typing import NamedTuple

import torch

from .graph_edits import NCHW_OF_NHWC, NHWC, finish_rewrite, has_static_layout, insert_call

aten = torch.ops.aten


def _pair(value):
    if isinstance(value, int):
        return value, value
    return (value[0], value[0]) if len(value) == 1 else (value[0], value[1])


class _Window(NamedTuple):
    """A pooling's geometry: per spatial axis (rows, columns) the kernel,
    stride, padding and dilation; the input's sizes and the output's; the
    axes of rows and columns in the pooled layout ((n, h, w, c) where the
    input is channels-last)."""

    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    sizes: tuple
    out: tuple
    channels_last: bool

    @property
    def axes(self):
        return (1, 2) if self.channels_last else (2, 3)


def _window_of(meta, kernel_size, stride, padding, dilation, ceil_mode):
    """The geometry of max_pool2d_with_indices(meta, ...), or None for what
    stays ATen's."""
    if ceil_mode or meta.dim() != 4 or meta.numel() == 0 or not has_static_layout(meta):
        return None
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride) if len(stride) > 0 else (kh, kw)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    n, c, h, w = meta.shape
    out_h = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    out_w = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if out_h <= 0 or out_w <= 0:
        return None  # ATen's error
    # The generated kernels walk their output's logical order with its last
    # axis innermost: pooled as (n, h, w, c), a channels-last input's
    # channels are that axis.
    channels_last = c > 1 and meta.is_contiguous(memory_format=torch.channels_last)
    return _Window(
        (kh, kw), (sh, sw), (ph, pw), (dh, dw), (n, c, h, w), (out_h, out_w), channels_last
    )


def pool_window(
    x,
    kernel_size,
    stride=(),
    padding=0,
    dilation=1,
    ceil_mode=False,
    *,
    call,
    indices=True,
    then=None,
):
    """max_pool2d_with_indices(x, ...) as ATen ops, each made by
    `call(target, *args)` (run eagerly or inserted into a graph); x's
    layout is its meta value's where it is a node. (values, indices), or
    None for what stays ATen's. Without `indices` (None in their place)
    the padding is the lowest value and the values a NaN-propagating
    maximum of the window's slices: no position, inside test or select;
    `then`, an elementwise ATen op, is applied to those values in the
    layout they were pooled in (before a channels-last pooling's permute
    back, so that the kernel still walks (n, h, w, c))."""
    meta = x.meta["val"] if isinstance(x, torch.fx.Node) else x
    window = _window_of(meta, kernel_size, stride, padding, dilation, ceil_mode)
    if window is None:
        return None
    planes = call(aten.permute.default, x, NHWC) if window.channels_last else x
    if not indices:
        padded = _padded(call, planes, window, _lowest(meta.dtype))
        best = None
        for value in _window_slices(call, padded, window):
            best = value if best is None else call(aten.maximum.default, best, value)
        if then is not None:
            best = call(then, best)
        return _in_input_layout(call, best, window), None
    best, index = _values_and_indices(call, _padded(call, planes, window, 0.0), window, meta.device)
    n, c, _, _ = window.sizes
    out_h, out_w = window.out
    if window.channels_last:
        index = call(aten.expand.default, index, [n, out_h, out_w, c])
        return _in_input_layout(call, best, window), _in_input_layout(call, index, window)
    return best, call(aten.expand.default, index, [n, c, out_h, out_w])


def _values_and_indices(call, padded, window, device):
    """ATen's running maximum over the window positions of `padded`, and
    the flat index in its plane of each output's winner."""
    (kh, kw), (sh, sw), (ph, pw) = window.kernel, window.stride, window.padding
    dh, dw = window.dilation
    _, _, h, w = window.sizes
    out_h, out_w = window.out
    # Each window position's row and column in the input from the output
    # coordinates (iota and arithmetic, which every kernel computes in
    # place): its flat index in the plane, and whether it is inside.
    rows = call(aten.arange.start_step, -ph, out_h * sh - ph, sh, dtype=torch.int64, device=device)
    rows = call(aten.unsqueeze.default, rows, 1)
    cols = call(aten.arange.start_step, -pw, out_w * sw - pw, sw, dtype=torch.int64, device=device)
    if window.channels_last:  # positions broadcast along the channels, innermost
        rows = call(aten.unsqueeze.default, rows, 2)
        cols = call(aten.unsqueeze.default, cols, 1)
    best = index = seen = None
    slices = _window_slices(call, padded, window)
    for i in range(kh):
        for j in range(kw):
            value = next(slices)
            row = call(aten.add.Tensor, rows, i * dh)
            col = call(aten.add.Tensor, cols, j * dw)
            at, inside = _position(call, row, col, h, w)
            if best is None:
                best, index, seen = value, at, inside
            else:
                best, index, seen = _running_max(call, best, index, seen, value, at, inside)
    return best, index


def _lowest(dtype):
    """The padding that never wins a maximum: -inf, or an integer type's
    least value."""
    return float("-inf") if dtype.is_floating_point else torch.iinfo(dtype).min


def _padded(call, planes, window, fill):
    """`planes` padded by the window's padding on its rows and columns."""
    ph, pw = window.padding
    widths = [0, 0, pw, pw, ph, ph] if window.channels_last else [pw, pw, ph, ph]
    return call(aten.constant_pad_nd.default, planes, widths, fill)


def _in_input_layout(call, pooled, window):
    """`pooled` (in the pooled layout) with the input's axes: a
    channels-last pooling's (n, h, w, c) permuted back to (n, c, h, w)."""
    return call(aten.permute.default, pooled, NCHW_OF_NHWC) if window.channels_last else pooled


def _window_slices(call, padded, window):
    """The padded input's strided slice for each window position, in
    window order (row by row)."""
    (kh, kw), (sh, sw), (dh, dw) = window.kernel, window.stride, window.dilation
    out_h, out_w = window.out
    rows_at, cols_at = window.axes
    for i in range(kh):
        for j in range(kw):
            value = call(
                aten.slice.Tensor, padded, rows_at, i * dh, i * dh + (out_h - 1) * sh + 1, sh
            )
            yield call(aten.slice.Tensor, value, cols_at, j * dw, j * dw + (out_w - 1) * sw + 1, sw)


def _position(call, row, col, h, w):
    """A window position's flat index in its plane and whether it is
    inside the input, from its row and column."""
    at = call(aten.add.Tensor, call(aten.mul.Tensor, row, w), col)
    rows_inside = call(
        aten.bitwise_and.Tensor, call(aten.ge.Scalar, row, 0), call(aten.lt.Scalar, row, h)
    )
    cols_inside = call(
        aten.bitwise_and.Tensor, call(aten.ge.Scalar, col, 0), call(aten.lt.Scalar, col, w)
    )
    return at, call(aten.bitwise_and.Tensor, rows_inside, cols_inside)


def _running_max(call, best, index, seen, value, at, inside):
    """ATen's update for the next window position: taken where it is
    inside and the first inside, greater, or NaN (a later NaN replaces an
    earlier one, as ATen's `val > max || isnan(val)`)."""
    wins = call(
        aten.bitwise_or.Tensor,
        call(
            aten.bitwise_or.Tensor,
            call(aten.bitwise_not.default, seen),
            call(aten.gt.Tensor, value, best),
        ),
        call(aten.isnan.default, value),
    )
    take = call(aten.bitwise_and.Tensor, inside, wins)
    return (
        call(aten.where.self, take, value, best),
        call(aten.where.self, take, at, index),
        call(aten.bitwise_or.Tensor, seen, inside),
    )


def _indices_read(node):
    return any(
        u.target is not operator.getitem or (u.args[1] == 1 and len(u.users) > 0)
        for u in node.users
    )


def _relu_read_only_by(image, pool):
    """Whether `image` is a relu that nothing but `pool` reads: the pool
    then takes the relu's input and the relu its values. relu is
    monotonic, so the maximum of a window's relus is the relu of its
    maximum, -0.0 and NaN included (both become +0.0 and stay NaN either
    way), and the kernel applies it once an output rather than once a
    window position (nine times in ResNet's 3x3 pool)."""
    return (
        isinstance(image, torch.fx.Node)
        and image.op == "call_function"
        and image.target == aten.relu.default
        and list(image.users) == [pool]
    )


def rewrite_max_pools(gm):
    """Replaces `gm`'s max_pool2d_with_indices calls by pool_window's ops
    (see the module); returns how many it replaced."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.max_pool2d_with_indices.default:
            continue
        fake = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        if fake is None or _indices_read(node):
            continue

        def call(target, *args, **kwargs):
            return insert_call(gm.graph, node, target, args, kwargs, fake_like=fake)

        image = node.args[0]
        relu_after = _relu_read_only_by(image, node)
        pooled = pool_window(
            image.args[0] if relu_after else image,
            *node.args[1:],
            **node.kwargs,
            call=call,
            indices=False,
            then=aten.relu.default if relu_after else None,
        )
        if pooled is None:
            continue
        # Its users are getitems (_indices_read): the values' reads the
        # maximum, the indices' has no reader.
        for user in list(node.users):
            if user.args[1] == 0:
                user.replace_all_uses_with(pooled[0])
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        if relu_after:
            gm.graph.erase_node(image)
        rewritten += 1
    return finish_rewrite(gm, rewritten)
