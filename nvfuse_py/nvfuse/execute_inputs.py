"""What execute() takes as its inputs: the list itself (a lone tensor or a
non-iterable is refused), vector inputs given as lists or tuples (spread
into their scalars, as the predecessor took them), the device check, and
the typed error naming an input nvfuse cannot bind."""

import torch

from .errors import InputError, InputTypeError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _with_vectors_flattened(inputs):
    """execute()'s inputs with each list or tuple of ints (the value of a
    define_vector(n) input, as the predecessor took it) spread into its n
    scalar inputs; None when a list holds anything else (the input is then
    refused as it stands, naming its type)."""
    flat = []
    for value in inputs:
        if not isinstance(value, (list, tuple)):
            flat.append(value)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            flat.extend(value)
        else:
            return None
    return flat


def _has_vectors(inputs):
    return any(isinstance(value, (list, tuple)) for value in inputs)


def vectors_spread(inputs):
    if not _has_vectors(inputs):
        return inputs
    flat = _with_vectors_flattened(inputs)
    return inputs if flat is None else flat


def input_list(inputs):
    """execute()'s inputs as a list, vectors spread into their elements; a
    lone tensor (which list() would split into its rows) or a non-iterable
    is an InputTypeError."""
    if type(inputs) is list:
        return vectors_spread(inputs)
    if isinstance(inputs, torch.Tensor):
        raise InputTypeError(
            "execute takes a list (or tuple) of inputs, got a tensor; pass [tensor]"
        )
    try:
        inputs = list(inputs)
    except TypeError:
        raise InputTypeError(
            f"execute takes a list (or tuple) of inputs, got {type(inputs).__name__}"
        ) from None
    return vectors_spread(inputs)


def refuse_unbindable(inputs):
    """Raises a typed error naming the first input nvfuse cannot bind:
    nested, sparse or meta tensors, ints outside int64. Run when execute
    failed, so that calls that work pay nothing for it."""
    for i, value in enumerate(inputs):
        if isinstance(value, torch.Tensor):
            if value.is_nested:
                raise InputTypeError(f"input {i} is a nested tensor; nvfuse takes strided tensors")
            if value.layout != torch.strided:
                raise InputTypeError(
                    f"input {i} has layout {value.layout}; nvfuse takes strided (dense) "
                    "tensors, e.g. t.to_dense()"
                )
            if value.is_meta:
                raise InputError(
                    f"input {i} is a meta tensor, which holds no data; pass a CPU or CUDA tensor"
                )
        elif isinstance(value, int) and not isinstance(value, bool):
            if not INT64_MIN <= value <= INT64_MAX:
                raise InputError(
                    f"input {i} is the int {value}, outside int64 [{INT64_MIN}, {INT64_MAX}]"
                )


def normalized_device(device):
    """torch.device(device), with "cuda" resolved to the current GPU."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def check_device(inputs, device):
    for i, t in enumerate(inputs):
        if isinstance(t, torch.Tensor) and t.dim() > 0 and t.device != device:
            raise InputError(
                f"execute(device={device}): input {i} is on {t.device}; move "
                "it, or leave device unset"
            )
