"""Streamed cluster rows (ReductionParams::cluster on a chunked row): rows
of phases that no cluster holds (fp32 rows of 262144 with two inputs) are
re-read per phase in chunks by a 16-block cluster instead of one block per
row. One cluster per 16 SMs walks the rows, so that the rows in flight stay
in L2 until their last phase re-reads them; each block bulk-prefetches its
part of its first row (and, in each last phase, of its next row) into L2. The
backward norms' column partials stay in each block's shared memory: one
inner-outer kernel where there were two segments. Without a GPU: which rows
stream, the kernel text, NVRTC's compile; on the GPU: against torch."""

import re

import pytest
import torch

from nvfuse import _C
from workloads.norm_definitions import CASES, check_case, define_case, reduction_tuning
from test_reduction_codegen import kernels_of, ptxas_resources

BF16, FP32 = torch.bfloat16, torch.float32
# Rows of phases without a variance (those with one stay chunked by a block).
STREAMED_CASES = [
    "softmax_bwd",
    "layer_norm_bwd",
    "rms_norm_bwd",
    "softmax_fwd",
    "log_softmax_fwd",
    "rms_norm_fwd",
]


def _code(name, dtype, rows, width):
    inputs = CASES[name].make_inputs(rows, width, dtype, "cpu")
    return define_case(name, dtype).cuda_code_for(inputs)


def _params(code):
    return re.search(r"// ReductionParams\((.*)\)", code).group(1)


@pytest.mark.parametrize("name", ["softmax_bwd", "layer_norm_bwd", "rms_norm_bwd"])
def test_rows_no_cluster_holds_are_streamed_by_one(name):
    code = _code(name, FP32, 4, 262144)
    assert len(kernels_of(code)) == 1, "one kernel, not a segment per reduction class"
    params = _params(code)
    assert "chunked" in params and "cluster=16" in params and "threads_per_row=1024" in params
    assert ("inner_outer" in params) == (name != "softmax_bwd")
    # Each block's part of the row: the same chunks in every phase.
    assert "const Index first_chunk = Index(blockIdx.x % kCluster) * part_chunks;" in code
    assert code.count("for (Index chunk = first_chunk; chunk < first_chunk + part_chunks") == 2
    # Walked by one wave of clusters, pushing their values to each other.
    assert (
        "row += Index(gridDim.x / kCluster)" in code
        or "group += Index(gridDim.x / kCluster)" in code
    )
    assert "nvfuse::cluster_reduce_pushed<kCluster, 0>" in code and "++cluster_round;" in code
    # The first row's part into L2 before the walk, the next row's in the last phase.
    assert code.count("nvfuse::prefetch_l2(args.") == 4  # two inputs, two rows
    assert "row + Index(gridDim.x / kCluster) * (kBlock / kLanes) < args.rows" in code
    for kernel, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (kernel, registers, stack, spilled)
    if "inner_outer" in params:
        # The block's columns: its part of the row, chunk by chunk.
        assert "const Index shared_width = part_chunks * chunk_width;" in code
        assert _C.nvrtc_compile(code, "nvfuse_reduction_finish", 90)["bytes"] > 0


def test_variance_rows_and_tuning_off_stay_chunked_by_a_block():
    # A variance's Welford states merged per chunk, block and cluster:
    # measured slower streamed (bias + residual + layer norm 58 -> 43-49%).
    params = _params(_code("bias_residual_layer_norm_fwd", FP32, 4, 262144))
    assert "chunked" in params and "cluster" not in params
    with reduction_tuning(streamed_cluster=1):
        params = _params(_code("softmax_bwd", FP32, 4, 262144))
    assert "chunked" in params and "cluster" not in params


def test_rows_past_half_the_l2_are_chunked_by_a_block():
    # 9 clusters' rows of 2^21 fp32 elements of two inputs (16 MB each)
    # would not stay in L2 between the phases.
    params = _params(_code("softmax_bwd", FP32, 2, 1 << 21))
    assert "chunked" in params and "cluster" not in params


@pytest.mark.parametrize("width,blocks", [(65536, 8), (40000, 4), (262144, 16)])
def test_rows_of_few_chunks_take_fewer_blocks(width, blocks):
    # Chunks of 1024 threads x 2 groups of 4 floats: 8192 elements.
    with reduction_tuning(max_cluster=1):
        code = _code("softmax_bwd", FP32, 4, width)
    assert f"cluster={blocks}," in _params(code)
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.parametrize("dtype", [FP32, BF16], ids=str)
@pytest.mark.parametrize("name", STREAMED_CASES)
def test_streamed_rows_do_not_spill(name, dtype):
    # Streamed inner-outer rows take at most 8 elements of each input a
    # chunk (layer-norm backward bf16 at 16 spilled 16 bytes).
    with reduction_tuning(max_cluster=1):
        code = _code(name, dtype, 4, 65536)
    assert "chunked" in _params(code) and "cluster=" in _params(code)
    for kernel, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (kernel, registers, stack, spilled)


def test_streamed_cluster_tuning_names_what_it_accepts():
    default = _C.reduction_tuning()
    assert default[7] == 16
    with pytest.raises(Exception, match="streamed_cluster must be 1, 2, 4, 8 or 16, got 3"):
        _C.set_reduction_tuning(16, streamed_cluster=3)
    assert _C.reduction_tuning() == default


@pytest.mark.gpu
@pytest.mark.parametrize("rows,width", [(1, 65536), (37, 40000), (301, 65536)], ids=str)
@pytest.mark.parametrize("dtype", [FP32, BF16], ids=str)
@pytest.mark.parametrize("name", STREAMED_CASES)
def test_streamed_rows_match_torch_on_gpu(name, dtype, rows, width):
    """Without clusters that hold rows (max_cluster=1), these rows stream:
    one row, rows that leave the walk's last round partly empty, and a
    width whose last block streams no chunk (5 chunks over 4 blocks)."""
    with reduction_tuning(max_cluster=1):
        fd = check_case(name, dtype, rows, width, "cuda")
    params = _params(fd.last_cuda_code())
    assert "chunked" in params and "cluster=" in params, params
    assert fd.last_kernel_info()["local_bytes"] == 0, fd.last_kernel_info()


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 19, 64])
@pytest.mark.parametrize("name", ["softmax_bwd", "layer_norm_bwd", "rms_norm_bwd"])
def test_long_fp32_rows_stream_on_gpu(name, rows):
    fd = check_case(name, FP32, rows, 262144, "cuda")
    assert "cluster=16" in _params(fd.last_cuda_code())
    assert "nvfuse segment" not in fd.last_cuda_code()
