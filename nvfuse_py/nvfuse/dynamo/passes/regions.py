"""Replaces each fused submodule `nvfuse_<k>` of a partitioned graph with
the FusedRegion that runs it as nvfuse fusions."""

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
