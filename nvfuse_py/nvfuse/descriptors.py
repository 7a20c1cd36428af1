"""What define_tensor needs to know of a tensor's layout, from its sizes and
strides: the predecessor's compute_contiguity and compute_tensor_descriptor,
which clients call to build a definition for given inputs."""

from . import _C


def _ints(values, what):
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a sequence of ints, got {values!r}") from None


def compute_tensor_descriptor(sizes, strides):
    """(contiguity, stride_order) of a tensor with these sizes and strides, as
    define_tensor takes them: contiguity in allocation order (fastest axis
    last) with None for broadcast axes, stride_order[i] the stride rank of
    axis i (0 = fastest)."""
    sizes = _ints(sizes, "compute_tensor_descriptor: sizes")
    strides = _ints(strides, "compute_tensor_descriptor: strides")
    if len(sizes) != len(strides):
        raise ValueError(
            f"compute_tensor_descriptor: {len(sizes)} sizes but {len(strides)} strides"
        )
    _, contiguity, stride_order = _C.describe_tensor(sizes, strides)
    if not stride_order:  # define_tensor's shorthand for row-major
        stride_order = range(len(sizes) - 1, -1, -1)
    return list(contiguity), list(stride_order)


def compute_contiguity(sizes, strides):
    """Per axis, in the given order: True when the axis is dense against the
    next non-broadcast axis to its right (or has stride 1 as the last one),
    None for a broadcast axis (size 1 or stride 0), else False."""
    sizes = _ints(sizes, "compute_contiguity: sizes")
    strides = _ints(strides, "compute_contiguity: strides")
    if len(sizes) != len(strides):
        raise ValueError(f"compute_contiguity: {len(sizes)} sizes but {len(strides)} strides")
    contiguity = [None] * len(sizes)
    inner_extent = 1  # the memory one step of the next dense axis spans
    for axis in reversed(range(len(sizes))):
        if sizes[axis] == 1 or strides[axis] == 0:
            continue
        contiguity[axis] = strides[axis] == inner_extent
        inner_extent = strides[axis] * sizes[axis]
    return contiguity
