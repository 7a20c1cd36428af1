"""Fusions as Lightning Thunder spells them for its nvFuser executor segment
as nvfuse's own spellings of the same math do (item: segmentation must not
depend on spelling). The layer-norm backward is in norm_definitions
(layer_norm_bwd_thunder), the causal softmax in test_shared_iotas."""

import pytest
import torch
import torch.nn.functional as F

from fusion_helpers import compiles_cleanly
from nvfuse import DataType, FusionDefinition


def _thunder_cross_entropy(dtype=DataType.Float):
    """Thunder's cross_entropy_fwd (reduction="mean", ignore_index=-100):
    the label index through where(ne, target, 0.0) (a Float), the picked
    logit reshaped from [N, 1] to [N], the valid count as a sum of a Bool."""
    with FusionDefinition() as fd:
        logits = fd.define_tensor([-1, -1], contiguity=True, dtype=dtype)
        target = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
        zero = fd.define_scalar(0, dtype=dtype)
        valid = fd.ops.ne(target, fd.define_scalar(-100, dtype=DataType.Int))
        index = fd.ops.where(valid, target, zero)
        n = target.shape()[-1]
        picked = fd.ops.take_along_axis(
            logits, fd.ops.broadcast_in_dim(index, shape=[n, 1], broadcast_dims=[0]), dim=1
        )
        picked = fd.ops.reshape(picked, new_shape=[n])
        row_max = fd.ops.max(logits, dims=[1])
        shifted = logits - fd.ops.broadcast_in_dim(row_max, shape=[n, 1], broadcast_dims=[0])
        log_sum = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), dims=[1]))
        losses = fd.ops.where(valid, fd.ops.neg(picked - row_max - log_sum), zero)
        count = fd.ops.cast(fd.ops.sum(valid, dims=[]), dtype=DataType.Float)
        fd.add_output(fd.ops.sum(losses, dims=[]) / count)
        fd.add_output(row_max)
        fd.add_output(log_sum)
    return fd


def _inputs(device):
    torch.manual_seed(0)
    logits = torch.randn(64, 100, device=device) * 3
    target = torch.randint(0, 100, (64,), device=device)
    target[5] = -100
    return logits, target


def test_thunder_cross_entropy_runs_in_generated_kernels_only():
    fd = _thunder_cross_entropy()
    logits, target = _inputs("cpu")
    code = fd.cuda_code_for([logits, target])
    assert {kind for kind, _ in fd.segment_summary()} == {"fused"}
    # the per-row losses, the mean over rows, and the count of valid labels
    assert code.count("// ==== nvfuse segment") <= 3
    for kernel in code.split("// ==== nvfuse segment")[1:]:
        compiles_cleanly(kernel[kernel.index("\n") + 1 :])


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_thunder_cross_entropy_matches_torch(device):
    logits, target = _inputs(device)
    loss, row_max, log_sum = _thunder_cross_entropy().execute([logits, target])
    torch.testing.assert_close(loss, F.cross_entropy(logits, target))
    torch.testing.assert_close(row_max, logits.max(1).values)
    torch.testing.assert_close(
        log_sum, torch.logsumexp(logits - logits.max(1, keepdim=True).values, 1)
    )
