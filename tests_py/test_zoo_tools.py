"""tools/zoo_kernels_check.py's region check, on definitions of its own:
it counts the kernels a GPU run would launch for a region's call (a cut
fusion's parts generated for what the earlier parts return) and says
which parts decline and why, without a GPU."""

import torch

from nvfuse import DataType, FusionDefinition
from tools.zoo_kernels_check import check_region

CHANNELS_LAST = [3, 0, 2, 1]


def test_a_cut_channels_last_batch_norm_counts_both_kernels():
    """The statistics and the normalization of a channels-last input are
    two parts; the second is generated for the first's channels-last
    results (each part generated alone from its printed definition lost
    that layout, and the count came out short)."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, -1, -1, -1],
            contiguity=True,
            dtype=DataType.Float,
            stride_order=CHANNELS_LAST,
        )
        var, mean = fd.ops.var_mean(t, [0, 2, 3], correction=0, keepdim=True)
        fd.add_output(fd.ops.exp((t - mean) * fd.ops.rsqrt(var + 1e-5)), stride_order=CHANNELS_LAST)
    x = torch.randn(4, 8, 6, 6).contiguous(memory_format=torch.channels_last)
    kinds, kernels, declined, rejected = check_region(fd, [x])
    assert kinds == {"fused": 2}
    assert len(kernels) == 2 and any(k.startswith("nvfuse_reduction") for k in kernels)
    assert declined == [] and rejected == []


def test_a_part_the_schedulers_reject_is_named_with_why():
    """A clone of an expanded tensor returns stride-0 memory, which no
    generated kernel writes: the part runs on the reference evaluator."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float)
        wide = fd.ops.expand(t, [t.size(0), 4, t.size(2)])
        fd.add_output(fd.ops.set(wide))
    kinds, kernels, declined, rejected = check_region(fd, [torch.randn(3, 1, 5)])
    assert kernels == [] and rejected == []
    assert len(declined) == 1 and "expanded" in declined[0], declined
