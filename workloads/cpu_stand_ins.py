"""Inputs for code generation without a GPU: the workloads' input makers
ask for CUDA tensors of random values; under `OnCpu` they get
uninitialized CPU tensors of the same sizes and dtypes (the code generator
reads only sizes, strides and dtypes). Also the norm cases' inputs and the
pointwise benchmark's bodies as definitions, for the same use."""

import torch

from workloads.norm_definitions import CASES, VARIANTS


class OnCpu(torch.overrides.TorchFunctionMode):
    """device="cuda" becomes the CPU; random tensors are left uninitialized."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if kwargs.get("device") == "cuda":
            kwargs["device"] = "cpu"
        if func in (torch.randn, torch.rand):
            return torch.empty(*args, **kwargs)
        if func is torch.randint:
            return torch.empty(args[2], dtype=torch.int64, device=kwargs.get("device"))
        if func in (torch.randn_like, torch.rand_like):
            return torch.empty_like(*args, **kwargs)
        return func(*args, **kwargs)


def norm_case_inputs(name, rows, width, dtype):
    """Uninitialized CPU inputs of norm case `name` (norm_definitions) at
    `rows` x `width`: each input as its spec says ("NW", "W", "N1", "N";
    the statistics in Float)."""
    case = CASES[name] if name in CASES else VARIANTS[name]
    shapes = {"NW": (rows, width), "W": (width,), "N1": (rows, 1), "N": (rows,)}
    return [
        torch.empty(shapes[spec], dtype=torch.float32 if spec in ("N1", "N") else dtype)
        for spec in case.inputs
    ]


def fusion_of_body(body, inputs, dtype):
    """The definition of a pointwise-benchmark body (`body(fd, *handles,
    nvfuse_dtype)` -> one output) for `inputs`, each defined from the tensor."""
    from nvfuse import FusionDefinition
    from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype

    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in inputs]
        fd.add_output(body(fd, *handles, torch_dtype_to_nvfuse_dtype(dtype)))
    return fd
