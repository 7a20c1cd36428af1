"""Reductions over axes that are not adjacent in memory (batch norm over
N, H and W of an NCHW tensor) split into reductions that generated kernels
take (passes/split_reductions.py)."""

import pytest
import torch
import torch.nn.functional as F

from nvfuse.dynamo.passes.split_reductions import memory_runs, split_reductions

from .conftest import aten_graph, fused_regions, record_definitions


def test_batch_norm_axes_of_nchw_are_two_runs_innermost_first():
    x = torch.empty(8, 4, 5, 6)
    assert memory_runs(x.shape, x.stride(), [0, 2, 3]) == [[2, 3], [0]]


def test_batch_norm_axes_of_channels_last_are_one_run():
    x = torch.empty(8, 4, 5, 6).to(memory_format=torch.channels_last)
    assert memory_runs(x.shape, x.stride(), [0, 2, 3]) == [[0, 2, 3]]


def test_size_one_axes_do_not_break_a_run():
    x = torch.empty(8, 1, 5, 6)
    assert memory_runs(x.shape, x.stride(), [0, 2, 3]) == [[0, 2, 3]]


def _statistics(x):
    var, mean = torch.var_mean(x, dim=[0, 2, 3], correction=0, keepdim=True)
    unbiased = torch.var(x, dim=[0, 2, 3])
    return (
        var,
        mean,
        unbiased,
        x.sum(dim=[0, 2, 3]),
        x.mean(dim=[0, 3], keepdim=True),
        x.amax(dim=[0, 2, 3]),
        x.amin(dim=[1, 3]),
    )


@pytest.mark.parametrize("channels_last", [False, True])
def test_split_reductions_compute_what_torch_does(channels_last):
    torch.manual_seed(0)
    x = torch.randn(6, 4, 5, 7, dtype=torch.float64) * 3 + 1
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    gm = aten_graph(_statistics, x)
    split = split_reductions(gm)
    assert split == (1 if channels_last else 6)  # channels-last: only the mean over N and W
    for got, want in zip(gm(x), _statistics(x)):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want)


def test_half_precision_reductions_split_in_float_and_round_once():
    torch.manual_seed(0)
    x = (torch.randn(6, 4, 5, 7) * 3 + 1).to(torch.bfloat16)
    gm = aten_graph(_statistics, x)
    assert split_reductions(gm) == 6
    for got, want, exact in zip(gm(x), _statistics(x), _statistics(x.double())):
        assert got.dtype == want.dtype and got.shape == want.shape
        # As close to the exact value as torch's own rounding is.
        error, torch_error = (got.double() - exact).abs().max(), (want.double() - exact).abs().max()
        assert error <= 2 * torch_error + 1e-6


def _batch_norm_train(x, weight, bias, running_mean, running_var):
    y = F.batch_norm(x, running_mean, running_var, weight, bias, training=True)
    return F.relu(y)


def test_a_batch_norm_region_gets_a_generated_kernel():
    """Without the split, the region's var_mean over N, H, W ran on the ATen
    reference evaluator; CPU tensors stand in for CUDA ones' layouts."""
    x, c = torch.randn(4, 8, 6, 6), 8
    args = (x, torch.ones(c), torch.zeros(c), torch.zeros(c), torch.ones(c))
    gm = aten_graph(_batch_norm_train, *args)
    gm.graph.eliminate_dead_code()
    assert split_reductions(gm) == 1
    fused, regions = fused_regions(gm)
    seen = record_definitions(regions)
    fused(*[a.clone() for a in args])
    kernels = [fd.cuda_code_for(region_args) for fd, region_args in seen]
    assert kernels and all("__global__" in code for code in kernels)
