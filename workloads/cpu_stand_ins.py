"""Inputs for code generation without a GPU: the workloads' input makers
ask for CUDA tensors of random values; under `OnCpu` they get
uninitialized CPU tensors of the same sizes and dtypes (the code generator
reads only sizes, strides and dtypes)."""

import torch


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
