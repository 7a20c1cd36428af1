"""Tensors without elements: torch gives them any strides and reductions
over their empty axes still produce values (the identity). nvfuse runs such
calls on the ATen reference evaluator, never a kernel launch of no blocks."""

import pytest
import torch

from nvfuse import FusionDefinition
from nvfuse.errors import UnsupportedError
from fusion_helpers import DEVICES


def _sum_fusion(dims):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.sum(t, dims=dims))
    return fd


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shape, dims", [((4, 0), [0]), ((4, 0), [1]), ((0, 5), [1]), ((0, 0), [0, 1])]
)
def test_sum_over_a_zero_size_axis_matches_torch(shape, dims, device):
    x = torch.randn(shape, device=device)
    (out,) = _sum_fusion(dims).execute([x])
    torch.testing.assert_close(out, x.sum(dims))


def test_cuda_code_for_an_empty_input_is_unsupported_not_a_crash():
    fd = _sum_fusion([0])
    with pytest.raises(UnsupportedError, match="input 0 has no elements"):
        fd.cuda_code_for([torch.randn(4, 0)])
    assert "nvfuse_reduction" in fd.cuda_code_for([torch.randn(4, 3)])


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_of_an_empty_slice_matches_torch(device):
    x = torch.randn(6, 8, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        part = fd.ops.slice(t, [0, 3], [6, 3])
        m = fd.ops.max(part, dims=[0])
        fd.add_output(fd.ops.exp(fd.ops.sub(part, fd.ops.broadcast_in_dim(m, [6, 0], [1]))))
        fd.add_output(fd.ops.sum(part, dims=[0]))
    exps, sums = fd.execute([x])
    assert exps.shape == (6, 0) and sums.shape == (0,)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_inputs_with_any_strides_are_accepted(device):
    x = torch.randn(5, 0, 1, device=device) * 3.0  # strides (0, 1, 0): still "contiguous"
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None])
        fd.add_output(fd.ops.mul(t, 2.0))
    (out,) = fd.execute([x])
    assert out.shape == (5, 0, 1)
