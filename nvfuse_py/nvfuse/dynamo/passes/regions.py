"""Replaces each fused submodule `nvfuse_<k>` of a partitioned graph with
the FusedRegion that runs it as nvfuse fusions; and makes one-op regions
for passes that insert work after partitioning."""

import torch

from ..region import FusedRegion


def install_regions(gm):
    """`gm` with its regions installed; returns the regions in order."""
    regions = []
    for name, child in list(gm.named_children()):
        if name.startswith("nvfuse_"):
            region = FusedRegion(child, name)
            setattr(gm, name, region)
            regions.append(region)
    return regions


def one_op_region(gm, anchor, target, x, args=(), kwargs=None):
    """A call, inserted before `anchor`, of a new FusedRegion (a submodule
    of `gm`) that runs target(x, *args, **kwargs) for the node `x`: work a
    pass adds after partitioning (a GEMM operand's padded copy) that
    nvfuse runs faster than the ATen op."""
    kwargs = kwargs or {}
    graph = torch.fx.Graph()
    operand = graph.placeholder("x")
    operand.meta["val"] = x.meta["val"]
    result = graph.call_function(target, (operand, *args), kwargs)
    result.meta["val"] = target(x.meta["val"], *args, **kwargs)
    graph.output(result)
    name = _free_name(gm, "nvfuse_copy_")
    gm.add_submodule(name, FusedRegion(torch.fx.GraphModule(torch.nn.Module(), graph), name))
    with gm.graph.inserting_before(anchor):
        call = gm.graph.call_module(name, (x,))
    call.meta["val"] = result.meta["val"]
    return call


def _free_name(gm, prefix):
    taken = {name for name, _ in gm.named_children()}
    return next(f"{prefix}{k}" for k in range(len(taken) + 1) if f"{prefix}{k}" not in taken)
