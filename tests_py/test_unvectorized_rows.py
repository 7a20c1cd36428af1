"""Long rows of half types that read one element a load (an odd width, as a
language model's logits over GPT-2's 50,257 words) hold twice the elements
a thread (schedule/reductions/row_elements.cpp). Without a GPU: the
schedule in the kernel's header, and NVRTC's compile of it (no spills). The
GPU runs are test_gpu_reductions.py's cases at width 50257."""

import re

import pytest
import torch

from workloads.norm_definitions import CASES, define_case
from test_reduction_codegen import ptxas_resources

BF16, FP32 = torch.bfloat16, torch.float32


def _code(name, dtype, width, rows=4):
    inputs = CASES[name].make_inputs(rows, width, dtype, "cpu")
    return define_case(name, dtype).cuda_code_for(inputs)


def _params(code):
    return re.search(r"// ReductionParams\((.*)\)", code).group(1)


def _cluster_and_block(params):
    cluster = re.search(r"cluster=(\d+)", params)
    block = int(re.search(r"block=(\d+)", params).group(1))
    return (int(cluster.group(1)) if cluster else 1), block


@pytest.mark.parametrize("name", ["softmax_fwd", "log_softmax_fwd"])
def test_long_odd_half_rows_hold_twice_the_elements(name):
    """50,257 elements at 32 a thread: 1,571 threads, a cluster of 4 blocks
    of 512 (at 16: 8 blocks of 256 threads)."""
    params = _params(_code(name, BF16, 50257))
    assert "vector_width=1," in params
    assert _cluster_and_block(params) == (4, 512), params


@pytest.mark.parametrize(
    "dtype,width,cluster,block",
    [
        (BF16, 50256, 2, 512),  # 16-byte vectors: staged, 7 groups of 8 a thread
        (FP32, 50257, 8, 256),  # not a half type: unmeasured, 16 elements a thread
        (BF16, 1001, 1, 64),  # one block holds the row
    ],
)
def test_other_rows_keep_the_usual_elements(dtype, width, cluster, block):
    params = _params(_code("log_softmax_fwd", dtype, width))
    assert _cluster_and_block(params) == (cluster, block), params


def test_one_phase_odd_rows_keep_their_chunks():
    """A sum reads its row once (chunked, unmeasured at 32): 16 a thread."""
    params = _params(_code("sum_inner", BF16, 50257))
    assert "chunked" in params and "groups_per_thread=16," in params, params


@pytest.mark.parametrize("name", ["softmax_fwd", "log_softmax_fwd"])
def test_long_odd_half_rows_compile_without_spills(name):
    for entry, (registers, stack, spilled) in ptxas_resources(_code(name, BF16, 50257)).items():
        assert stack == 0 and spilled == 0, (entry, registers, stack, spilled)
