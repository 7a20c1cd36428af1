"""A persistent row keeps the exps that a later phase reads again in
registers (ReductionParams::carry_exps): softmax's exp(x - max) is summed in
phase 1 and divided by the sum in phase 2, which then reads the carried
values instead of computing the exp again from the held inputs. Without a
GPU the kernel text is checked and compiled by NVRTC; on a GPU the results
are bit-identical to the kernel that computes them again. Rows held by a
cluster compute them again (their threads hold 32 elements)."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import compiles_cleanly, kernel_of
from workloads.norm_definitions import CASES, define_case, reduction_tuning

P_DROP = 0.1


def _phase(kernel, n):
    start = kernel.index(f"// phase {n}")
    end = kernel.find(f"// phase {n + 1}", start)
    return kernel[start:] if end < 0 else kernel[start:end]


def _masked_softmax_dropout(dtype, keep_output=False, random_in_value=False, seed=None):
    """The nanoGPT attention prologue: causal mask, softmax, dropout; with
    the keep mask as an output too, a kept value made from the draw, or an
    explicit (seed, offset 4) (test_skipped_draws.py)."""
    with FusionDefinition() as fd:
        scores = fd.define_tensor([-1, -1, -1], contiguity=True, dtype=dtype)
        mask = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Bool)
        s = fd.ops.cast(scores, DataType.Float)
        s = fd.ops.where(fd.ops.broadcast(mask, [True, False, False]), s, float("-inf"))
        e = fd.ops.exp(s - fd.ops.broadcast(fd.ops.max(s, [2]), [False, False, True]))
        probs = e / fd.ops.broadcast(fd.ops.sum(e, [2]), [False, False, True])
        u = (
            fd.ops.rand_like(probs)
            if seed is None
            else fd.ops.rand_like(probs, rng_seed=seed, rng_offset=4)
        )
        keep = fd.ops.lt(u, 1.0 - P_DROP)
        kept = probs * (1.0 / (1.0 - P_DROP))
        if random_in_value:
            kept = kept * u
        fd.add_output(fd.ops.cast(fd.ops.where(keep, kept, 0.0), dtype))
        if keep_output:
            fd.add_output(keep)
    return fd


def _prologue_inputs(seq, device, dtype=torch.bfloat16):
    scores = torch.randn(3, seq, seq, device=device).to(dtype)
    mask = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=device))
    return [scores, mask]


def test_softmax_computes_its_exps_once_and_carries_them_to_the_next_phase():
    kernel = kernel_of(
        define_case("softmax_fwd", torch.bfloat16).cuda_code_for(
            [torch.randn(64, 8192, dtype=torch.bfloat16)]
        )
    )
    assert "carry_exps" in kernel
    assert kernel.count("nvfuse::exp_nonpositive(") == 1
    assert "carried_" in _phase(kernel, 1) and "] = t" in _phase(kernel, 1)
    phase2 = _phase(kernel, 2)
    assert "= carried_" in phase2 and "exp_nonpositive" not in phase2
    # Phase 2 no longer reads the held input.
    assert "in_t0[k]" not in phase2


def test_the_attention_prologue_carries_its_exps_past_the_held_mask_and_scores():
    code = _masked_softmax_dropout(DataType.BFloat16).cuda_code_for(_prologue_inputs(256, "cpu"))
    kernel = kernel_of(code)
    phase2 = _phase(kernel, 2)
    assert "= carried_" in phase2 and "exp_nonpositive" not in phase2
    assert "in_t0[k]" not in phase2 and "in_t1[k]" not in phase2
    compiles_cleanly(code)


def test_without_the_tuning_the_exps_are_computed_again():
    with reduction_tuning(carry_exps=0):
        kernel = kernel_of(
            define_case("softmax_fwd", torch.float32).cuda_code_for([torch.randn(64, 8192)])
        )
    assert "carried_" not in kernel and "carry_exps" not in kernel
    assert kernel.count("nvfuse::exp_nonpositive(") == 2


@pytest.mark.parametrize("name", ["log_softmax_fwd", "layer_norm_fwd", "softmax_bwd"])
def test_exps_not_read_again_are_not_carried(name):
    """Log-softmax sums its exps but writes shifted - log-sum; the others
    have no exp."""
    kernel = kernel_of(
        define_case(name, torch.float32).cuda_code_for(
            CASES[name].make_inputs(64, 1024, torch.float32, "cpu")
        )
    )
    assert "carried_" not in kernel and "carry_exps" not in kernel


def test_a_chunked_row_computes_its_exps_again():
    """A chunk's registers are reused by the next chunk: nothing to carry."""
    with reduction_tuning(max_cluster=1):
        kernel = kernel_of(
            define_case("softmax_fwd", torch.float32).cuda_code_for([torch.randn(4, 65536)])
        )
    assert "persistent" not in kernel.split("ReductionParams(", 1)[1].split(")", 1)[0]
    assert "carried_" not in kernel


def test_a_cluster_row_computes_its_exps_again():
    """A cluster row's threads hold 32 elements: the carried floats would
    cost bf16 softmax its occupancy (ReductionParams::carry_exps)."""
    code = define_case("softmax_fwd", torch.bfloat16).cuda_code_for(
        [torch.randn(2, 65536, dtype=torch.bfloat16)]
    )
    kernel = kernel_of(code)
    assert "cluster=" in kernel and "carried_" not in kernel
    assert kernel.count("nvfuse::exp_nonpositive(") == 2


@pytest.mark.gpu
@pytest.mark.parametrize("width", [7, 1600, 8192, 65536])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_carried_exps_give_the_bits_of_computed_ones_on_the_gpu(width, dtype):
    x = torch.randn(33, width, device="cuda").to(dtype)
    results = {}
    for carry in (0, 1):
        with reduction_tuning(carry_exps=carry):
            fd = define_case("softmax_fwd", dtype)
            (results[carry],) = fd.execute([x])
            carried = "carried_" in fd.cuda_code_for([x.cpu()])
            assert carried == (bool(carry) and width < 65536)  # 65536: a cluster row
    assert torch.equal(results[0], results[1])
    torch.testing.assert_close(
        results[1].float(),
        torch.softmax(x.float(), 1),
        rtol=1e-2 if dtype == torch.bfloat16 else 1e-5,
        atol=1e-5,
    )


@pytest.mark.gpu
@pytest.mark.parametrize("seq", [7, 1024, 4096])
def test_the_attention_prologue_with_carried_exps_matches_on_the_gpu(seq):
    inputs = _prologue_inputs(seq, "cuda")
    results = {}
    for carry in (0, 1):
        with reduction_tuning(carry_exps=carry):
            torch.manual_seed(7)
            (results[carry],) = _masked_softmax_dropout(DataType.BFloat16).execute(inputs)
    assert torch.equal(results[0], results[1])
    scores, mask = inputs
    probs = torch.softmax(scores.float().masked_fill(~mask, float("-inf")), -1)
    kept = results[1] != 0
    expected = torch.where(kept, probs / (1.0 - P_DROP), 0.0).to(torch.bfloat16)
    torch.testing.assert_close(results[1], expected, rtol=1e-2, atol=1e-5)
    dropped = 1.0 - kept[mask.expand_as(kept)].double().mean().item()
    assert abs(dropped - P_DROP) < 0.05 if seq > 7 else True
