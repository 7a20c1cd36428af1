"""The inputs part of a repro script: random tensors with the same sizes,
strides, dtypes and devices as the inputs a fusion ran on."""

import torch


def _tensor_expression(t: torch.Tensor) -> str:
    sizes = tuple(t.size())
    strides = tuple(t.stride())
    storage = 1 + sum((s - 1) * st for s, st in zip(sizes, strides) if s > 0)
    if t.numel() == 0:
        storage = 0
    device = f"'{t.device}'"
    if t.dtype == torch.bool:
        base = f"torch.randint(0, 2, ({storage},), device={device}).bool()"
    elif t.dtype.is_floating_point or t.dtype.is_complex:
        if t.dtype.itemsize == 1:  # float8: sample in float, then convert
            base = f"torch.randn({storage}, device={device}).to({t.dtype})"
        else:
            base = f"torch.randn({storage}, dtype={t.dtype}, device={device})"
    else:
        base = f"torch.randint(-8, 8, ({storage},), dtype={t.dtype}, device={device})"
    return f"{base}.as_strided({sizes}, {strides})"


def inputs_script(inputs) -> str:
    lines = ["inputs = ["]
    for value in inputs:
        if isinstance(value, torch.Tensor):
            lines.append(f"    {_tensor_expression(value)},")
        else:
            lines.append(f"    {value!r},")
    lines.append("]")
    lines.append("fd.execute(inputs)")
    return "\n".join(lines) + "\n"
