"""Reduction kernels shared across row widths (ReductionParams::width_generic,
schedule/reductions/width_buckets.cpp), on with ReductionTuning::width_buckets
(off by default: the shared kernels run slower): plain persistent rows take
the lanes a row from the launch, so one kernel serves a bucket of widths.
Without a GPU: how many kernels a sweep of 64 widths generates (through
cuda_code_for), and which widths share one. On the GPU: one definition run
at many widths, every result against torch."""

import pytest
import torch

from nvfuse import _C
from fusion_helpers import compiles_cleanly, params_of
from tools.size_sweep import SIZES, kernel_text
from workloads.cpu_stand_ins import norm_case_inputs
import workloads.loss_and_norm_definitions as loss_defs
from workloads.norm_definitions import (
    CASES,
    assert_case_close,
    define_case,
    reduction_tuning,
)

BF16, FP32 = torch.bfloat16, torch.float32


def kernels_over_sweep(name, dtype, rows=64):
    fd = define_case(name, dtype)
    return {
        kernel_text(fd.cuda_code_for(norm_case_inputs(name, rows, width, dtype))) for width in SIZES
    }


@pytest.fixture
def width_buckets():
    with reduction_tuning(width_buckets=1):
        yield


# The bound per case over 64 widths from 128 to 16384: the vector width
# (1, 2, 4 or 8 bf16 elements, from the width's alignment) times three
# launch buckets (rows of a warp or less, blocks up to 512 threads, 1024).
# Each width its own kernel makes 54 (bf16) and 53 (fp32).
@pytest.mark.parametrize(
    "name,dtype,bound",
    [
        ("softmax_fwd", BF16, 11),
        ("softmax_fwd", FP32, 8),
        ("layer_norm_fwd", BF16, 11),
        ("layer_norm_fwd", FP32, 8),
        ("sum_inner", BF16, 11),
        ("var_mean_inner", FP32, 8),
    ],
    ids=str,
)
def test_a_sweep_of_64_widths_generates_few_kernels(name, dtype, bound, width_buckets):
    assert len(kernels_over_sweep(name, dtype)) <= bound


def test_every_width_its_own_kernel_by_default():
    specialized = kernels_over_sweep("softmax_fwd", BF16)
    assert len(specialized) >= 40
    assert all("constexpr int kLanes" in text for text in specialized)


def test_widths_of_one_bucket_share_the_kernel_text(width_buckets):
    fd = define_case("layer_norm_fwd", BF16)

    def text(width):
        return kernel_text(fd.cuda_code_for(norm_case_inputs("layer_norm_fwd", 64, width, BF16)))

    # 16-byte vectors, 128 to 256 threads a row: one kernel.
    assert text(1600) == text(2400) == text(4096)
    # Odd widths: one element a vector, 64 to 512 threads a row.
    assert text(1105) == text(3001) == text(8191)
    assert text(1105) != text(1600)
    # Rows of a warp or less and 1024-thread rows are buckets of their own.
    assert text(200) != text(1600) != text(16384)
    assert "width_generic" in params_of(text(1600))
    assert "const int kLanes = 1 << args.lane_shift;" in text(1600)


def test_rows_that_walk_or_split_keep_their_launch_compiled_in(width_buckets):
    fd = define_case("softmax_fwd", BF16)
    few_long_rows = fd.cuda_code_for([torch.empty(2, 262144, dtype=BF16)])
    assert "width_generic" not in params_of(few_long_rows)


def test_a_block_row_finishes_in_the_first_warp_and_a_warp_row_by_shuffles(width_buckets):
    """The bucket says how a row's lanes combine: a whole block (a loss row
    still finishes in the first warp) or a group of a warp's lanes."""
    logits = torch.randn(64, 8192).to(BF16)
    labels = torch.randint(0, 8192, (64,))
    loss = kernel_text(loss_defs.cross_entropy_fwd_fd(BF16).cuda_code_for([logits, labels]))
    assert loss.count("nvfuse::reduce_into_first_warp_at_launch(") == 1
    assert loss.count("nvfuse::row_reduce_in_block(") == 1  # the max reaches every warp
    short_rows = [torch.empty(64, 200, dtype=BF16)]
    short = kernel_text(define_case("softmax_fwd", BF16).cuda_code_for(short_rows))
    assert "nvfuse::row_reduce_in_warp(" in short and "row_reduce_in_block" not in short
    compiles_cleanly(loss_defs.cross_entropy_fwd_fd(BF16).cuda_code_for([logits, labels]))
    compiles_cleanly(define_case("softmax_fwd", BF16).cuda_code_for(short_rows))


def test_width_buckets_is_a_tuning_knob_that_names_what_it_accepts():
    default = _C.reduction_tuning()
    assert default[9] == 0
    with pytest.raises(Exception, match="width_buckets must be 0 or 1, got 2"):
        _C.set_reduction_tuning(16, width_buckets=2)
    assert _C.reduction_tuning() == default


# --- on the GPU --------------------------------------------------------------

# Around every bucket's edges (a warp, 512 and 1024 threads a row at 16
# elements a thread) and the vector widths' (odd, even, multiples of 8).
GPU_WIDTHS = [1, 2, 7, 31, 32, 33, 127, 129, 500, 513, 1000, 1024, 1025, 2049, 4095]
GPU_WIDTHS += [8192, 8193, 12345, 16383, 16384]
GPU_CASES = [
    "softmax_fwd",
    "log_softmax_fwd",
    "softmax_bwd",
    "layer_norm_fwd",
    "rms_norm_fwd",
    "var_mean_inner",
    "sum_inner",
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=str)
@pytest.mark.parametrize("name", GPU_CASES)
def test_one_definition_at_many_widths_matches_torch(name, dtype, width_buckets):
    fd = define_case(name, dtype)
    case = CASES[name]
    kernels = set()
    for width in GPU_WIDTHS:
        rows = 37  # not a multiple of a block's rows
        torch.manual_seed(width)
        inputs = case.make_inputs(rows, width, dtype, "cuda")
        outs = fd.execute(inputs)
        assert_case_close(name, outs, case.torch_reference(*inputs), rows, width)
        kernels.add(kernel_text(fd.last_cuda_code()))
    # 20 widths: the buckets and vector widths they touch, not one each.
    assert len(kernels) <= 12
