"""A causal mask spelled with one iota broadcast along two axes (as Thunder
writes it: iota[:, None] >= iota[None, :]) feeding a softmax is one
reduction kernel: the pass duplicate_shared_iotas gives each reader its own
iota, which the kernel computes from the element's position."""

import pytest
import torch

from fusion_helpers import compiles_cleanly
from nvfuse import DataType, FusionDefinition


def _causal_softmax(seq):
    with FusionDefinition() as fd:
        scores = fd.define_tensor([-1, -1, seq, seq], contiguity=True)
        positions = fd.ops.iota(seq, 0, 1, dtype=DataType.Int)
        rows = fd.ops.broadcast_in_dim(positions, shape=[seq, 1], broadcast_dims=[0])
        cols = fd.ops.broadcast_in_dim(positions, shape=[1, seq], broadcast_dims=[1])
        keep = fd.ops.ge(
            fd.ops.broadcast_in_dim(rows, shape=[seq, seq], broadcast_dims=[0, 1]),
            fd.ops.broadcast_in_dim(cols, shape=[seq, seq], broadcast_dims=[0, 1]),
        )
        shape = scores.shape()
        masked = fd.ops.where(
            fd.ops.broadcast_in_dim(keep, shape=shape, broadcast_dims=[2, 3]), scores, float("-inf")
        )
        top = fd.ops.broadcast_in_dim(
            fd.ops.max(masked, dims=[3], keepdim=True), shape=shape, broadcast_dims=[0, 1, 2, 3]
        )
        e = fd.ops.exp(masked - top)
        total = fd.ops.broadcast_in_dim(
            fd.ops.sum(e, dims=[3], keepdim=True), shape=shape, broadcast_dims=[0, 1, 2, 3]
        )
        fd.add_output(e / total)
    return fd


def _reference(scores):
    seq = scores.shape[-1]
    mask = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).tril()
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)


def test_causal_softmax_with_a_shared_iota_is_one_kernel():
    fd = _causal_softmax(16)
    code = fd.cuda_code_for([torch.randn(2, 3, 16, 16)])
    assert "// ==== nvfuse segment" not in code
    compiles_cleanly(code)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_causal_softmax_with_a_shared_iota_matches_torch(device):
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 16, 16, device=device)
    (out,) = _causal_softmax(16).execute([scores])
    torch.testing.assert_close(out, _reference(scores))
