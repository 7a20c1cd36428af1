"""Generated reduction and normalization kernels without a GPU: every case
of norm_definitions at short, odd, long and very long rows, in fp32 and
bf16, gets a reduction kernel per segment that NVRTC compiles for sm_90; the
schedule picks what the row needs (vector width, persistent or chunked,
split); segmentation splits the backward fusions by reduction axes."""

import re

import pytest
import torch

from nvfuse import _C, DataType, FusionDefinition
from fusion_helpers import params_of
from workloads.norm_definitions import CASES, define_case, define_column_sums, reduction_tuning

SEGMENT = re.compile(r"^// ==== nvfuse segment: outputs[ 0-9]+ ====$", re.M)


def kernels_of(code):
    parts = [p for p in SEGMENT.split(code) if p.strip()]
    return parts


def cpu_inputs(name, rows, width, dtype):
    return CASES[name].make_inputs(rows, width, dtype, "cpu")


@pytest.mark.parametrize("width", [1, 7, 1600, 65536])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_case_compiles_as_reduction_kernels(name, dtype, width):
    fd = define_case(name, dtype)
    code = fd.cuda_code_for(cpu_inputs(name, 4, width, dtype))
    kernels = kernels_of(code)
    backward = name in ("layer_norm_bwd", "layer_norm_bwd_thunder", "rms_norm_bwd")
    # Backward: one inner-outer kernel while the row fits in the registers
    # of a block or of a cluster (65536: 8 blocks).
    expected = 1
    assert len(kernels) == expected
    for kernel in kernels:
        assert "nvfuse_reduction" in kernel
        assert ("_finish(const Args args)" in kernel) == (backward and expected == 1)
        compiled = _C.nvrtc_compile(kernel, "nvfuse_reduction", 90)
        assert not compiled["is_ptx"] and compiled["bytes"] > 0


def test_seed_layer_norm_is_one_vectorized_persistent_kernel():
    from test_seed_layer_norm import nvfuser_fusion_id0

    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    inputs = [
        torch.randn(16, 128, 1600, dtype=torch.bfloat16),
        torch.randn(1600, dtype=torch.bfloat16),
        torch.randn(1600, dtype=torch.bfloat16),
    ]
    code = fd.cuda_code_for(inputs)
    assert len(kernels_of(code)) == 1
    params = params_of(code)
    assert "inner" in params and "persistent" in params
    assert "vector_width=8" in params  # 16-byte bf16 loads: the seed's regression
    assert "row_rank=1" in params  # [16, 128] rows merge into one axis


def test_long_rows_are_chunked_and_few_rows_split():
    fd = define_case("sum_inner", torch.float32)
    assert "chunked" in params_of(fd.cuda_code_for([torch.randn(256, 65536)]))
    assert "split" in params_of(fd.cuda_code_for([torch.randn(1, 1 << 20)]))
    fd = define_case("layer_norm_fwd", torch.float32)
    # A normalization needs its whole row: never split over blocks.
    assert "split" not in params_of(
        fd.cuda_code_for(cpu_inputs("layer_norm_fwd", 1, 1 << 20, torch.float32))
    )


def test_long_normalization_rows_are_held_by_a_cluster():
    """Rows too long for one block's registers that phases would re-read
    are split over a thread block cluster (the fewest blocks of at most 512
    threads, 16 at most, those of 8 or 16 with twice the elements per
    thread; 16 with a variance only when staged; rows of half types without
    a variance at twice the elements again),
    whose blocks combine each reduction through distributed shared memory."""
    fd = define_case("layer_norm_fwd", torch.float32)
    code = fd.cuda_code_for(cpu_inputs("layer_norm_fwd", 4, 65536, torch.float32))
    assert "cluster=8" in params_of(code) and "threads_per_row=256" in params_of(code)
    # fp32: the row's sum, then its squared deviations; bf16 (not staged):
    # one Welford state.
    assert "nvfuse::cluster_reduce<kCluster, 1>" in code and ", staged" not in code
    with reduction_tuning(staging=0):
        half = define_case("layer_norm_fwd", torch.bfloat16).cuda_code_for(
            cpu_inputs("layer_norm_fwd", 4, 65536, torch.bfloat16)
        )
    assert "cluster_reduce<kCluster, 0>(acc_" in half and "cluster_reduce<kCluster, 1>" not in half
    code = fd.cuda_code_for(cpu_inputs("layer_norm_fwd", 4, 131072, torch.float32))
    assert "cluster=8" in params_of(code) and "threads_per_row=512" in params_of(code)
    # 262144: 16 blocks (a non-portable cluster); layer norm's rows only
    # when staged, else chunked (as measured faster). Layer-norm backward's
    # two sums pass the cluster together.
    backward = define_case("layer_norm_bwd", torch.bfloat16)
    assert "cluster=16" in backward.cuda_code_for(
        cpu_inputs("layer_norm_bwd", 4, 262144, torch.bfloat16)
    )
    long_rows = cpu_inputs("layer_norm_fwd", 4, 262144, torch.float32)
    staged = params_of(fd.cuda_code_for(long_rows))
    assert ", staged" in staged and "cluster=16" in staged
    with reduction_tuning(staging=0):
        assert "chunked" in params_of(fd.cuda_code_for(long_rows))
    # bf16 rows without a variance: clusters of twice the elements a
    # thread (8 blocks of 32 elements instead of 16 of 16).
    for case in ("log_softmax_fwd", "softmax_fwd", "rms_norm_fwd"):
        for dtype in (torch.float32, torch.bfloat16):
            code = define_case(case, dtype).cuda_code_for(cpu_inputs(case, 4, 262144, dtype))
            blocks = 16 if dtype == torch.float32 else 8
            assert f"cluster={blocks}," in params_of(code), params_of(code)
            assert "threads_per_row=512" in params_of(code)
            assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)
    bf16_layer_norm = define_case("layer_norm_fwd", torch.bfloat16).cuda_code_for(
        cpu_inputs("layer_norm_fwd", 4, 262144, torch.bfloat16)
    )
    assert "cluster=16," in params_of(bf16_layer_norm)
    # Past 16 blocks: chunked; a single-phase reduction never needs the row.
    assert "chunked" in params_of(
        fd.cuda_code_for(cpu_inputs("layer_norm_fwd", 4, 1 << 20, torch.float32))
    )
    sums = define_case("sum_inner", torch.float32)
    assert "cluster" not in params_of(sums.cuda_code_for([torch.randn(256, 65536)]))
    with reduction_tuning(max_cluster=1):
        assert "chunked" in params_of(
            fd.cuda_code_for(cpu_inputs("layer_norm_fwd", 4, 65536, torch.float32))
        )


def test_bf16_variance_rows_holding_two_inputs_are_pipelined():
    """Many bf16 rows that hold two inputs and reduce a variance (bias +
    residual + layer norm) are pipelined: the next row's loads go out
    before this row's reductions; the kernel compiles. Rows of one held
    input (layer norm, var_mean) and others are pipelined only when forced
    (pipelining=2), never where a block would get at most one row."""
    name = "bias_residual_layer_norm_fwd"
    fd = define_case(name, torch.bfloat16)
    code = fd.cuda_code_for(cpu_inputs(name, 4096, 8192, torch.bfloat16))
    assert "pipelined" in params_of(code)
    kernel = code[code.index("__global__") :]
    assert kernel.index("next_t0[k] =") < kernel.index("nvfuse::row_reduce")
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0
    assert "pipelined" not in params_of(
        fd.cuda_code_for(cpu_inputs(name, 512, 8192, torch.bfloat16))
    )
    fp32 = define_case(name, torch.float32)
    assert "pipelined" not in params_of(
        fp32.cuda_code_for(cpu_inputs(name, 4096, 8192, torch.float32))
    )
    for one_input in ("layer_norm_fwd", "var_mean_inner"):
        single = define_case(one_input, torch.bfloat16)
        inputs = cpu_inputs(one_input, 4096, 8192, torch.bfloat16)
        assert "pipelined" not in params_of(single.cuda_code_for(inputs))
        with reduction_tuning(pipelining=2):
            assert "pipelined" in params_of(single.cuda_code_for(inputs))
    softmax = define_case("softmax_fwd", torch.bfloat16)
    inputs = cpu_inputs("softmax_fwd", 4096, 8192, torch.bfloat16)
    assert "pipelined" not in params_of(softmax.cuda_code_for(inputs))
    with reduction_tuning(pipelining=2):
        assert "pipelined" in params_of(softmax.cuda_code_for(inputs))
        few_rows = fd.cuda_code_for(cpu_inputs(name, 64, 8192, torch.bfloat16))
    assert "pipelined" not in params_of(few_rows)
    with reduction_tuning(pipelining=0):
        assert "pipelined" not in params_of(
            fd.cuda_code_for(cpu_inputs(name, 4096, 8192, torch.bfloat16))
        )


def test_outer_reduction_walks_down_contiguous_columns():
    fd = define_case("sum_outer", torch.bfloat16)
    params = params_of(fd.cuda_code_for([torch.randn(4096, 1024, dtype=torch.bfloat16)]))
    assert params.startswith("outer") and "vector_width=8" in params


def test_outer_walk_loads_a_batch_of_rows_before_their_math():
    """Blocks of 512 (16 rows of 32 threads); each thread's loads of
    kOuterBatch row steps go out before the math of any of them, with no
    remainder loop of one load at a time; the last block's combine loads
    its partial rows kOuterBatch at a time."""
    fd = define_case("sum_outer", torch.bfloat16)
    code = fd.cuda_code_for([torch.randn(32768, 8192, dtype=torch.bfloat16)])
    assert "block=512 (32x16), split" in params_of(code)
    code = code[code.index('extern "C" __global__') :]
    walk = code[code.index("first_row < args.width") : code.index("column_reduce_all")]
    assert walk.index("batch_t0[b] = ") < walk.index("acc_t2[v] = ")
    assert walk.count("batch_t0[b] = ") == 1 and "#pragma unroll 4" not in walk
    combine = code[code.index("arrive_last") :]
    assert "#pragma unroll 4\n  for (int i = ty; col_valid && i < group_rows; i += kY)" in combine


@pytest.mark.parametrize(
    "dtype,rows,width,clustered",
    [
        (torch.bfloat16, 8192, 4096, True),  # 32 column groups of 16 threads: 256 blocks
        (torch.float32, 2048, 1600, True),  # 25: 200 blocks
        (torch.bfloat16, 2048, 1600, True),  # 13: 104 blocks
        (torch.bfloat16, 8192, 4224, True),  # 33: 264 blocks, two an SM
        (torch.bfloat16, 2048, 1024, False),  # 8: 64 blocks, under half the SMs
        (torch.bfloat16, 8192, 4352, False),  # 34: 272 blocks, over two an SM
        (torch.float32, 8192, 4096, False),  # 64: 512 blocks
        (torch.bfloat16, 16384, 4096, False),  # a walk past kOuterClusterMaxRows
    ],
    ids=str,
)
def test_outer_sums_split_over_a_cluster_combine_in_shared_memory(dtype, rows, width, clustered):
    """Where a cluster of 8 blocks of 256 threads (16 across the columns) a
    column group gives half a block to two blocks an SM (sm_90: 132 SMs
    here), the blocks push their column results into block rank 0's shared
    memory, which combines them in rank order: no partials in global
    memory, no counter. Elsewhere the split over gridDim.y of 512-thread
    blocks stays."""
    fd = define_case("sum_outer", dtype)
    code = fd.cuda_code_for([torch.randn(rows, width, dtype=dtype)])
    params = params_of(code)
    assert (", cluster=8" in params) == clustered and (", split" in params) != clustered
    assert ("block=256 (16x16)" if clustered else "block=512 (32x16)") in params
    kernel = code[code.index('extern "C" __global__') :]
    if clustered:
        assert "arrive_last" not in kernel and "store_partial" not in kernel
        assert "const int rank = int(blockIdx.x % kCluster);" in kernel
        assert "Index(rank) * kY + ty" in kernel
        assert re.search(
            r"nvfuse::store_to_block\(&ranks_acc_t\d+\[\(rank \* kX \+ "
            r"threadIdx.x % kX\) \* kVec \+ v\], 0u",
            kernel,
        )
        combine = kernel[kernel.index("if (rank != 0) return;") :]
        assert re.search(r"ranks_acc_t\d+\[\(q \* kX", combine.split("column_reduce_all")[0])
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.parametrize(
    "dtype,width,split",
    [
        (torch.bfloat16, 65536, False),  # 256 column blocks of 32 threads x 8 lanes
        (torch.bfloat16, 34816, False),  # 136
        (torch.bfloat16, 32768, True),  # 128: under one an SM (132 SMs here)
        (torch.float32, 32768, False),  # 256 of 32 threads x 4 lanes
        (torch.float32, 16384, True),  # 128
    ],
    ids=str,
)
def test_outer_sums_whose_column_blocks_fill_every_sm_walk_unsplit(dtype, width, split):
    """Column blocks that alone put one on every SM walk all the rows
    themselves: splitting them too made a second wave and a combine
    (H100: bf16 over 4096 rows of 65536, 95 -> 100% of copy bandwidth)."""
    fd = define_case("sum_outer", dtype)
    code = fd.cuda_code_for([torch.randn(4096, width, dtype=dtype)])
    params = params_of(code)
    assert "block=512 (32x16)" in params and (", split" in params) == split
    kernel = code[code.index('extern "C" __global__') :]
    assert ("arrive_last" in kernel) == split
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


def test_outer_variance_stays_split_over_global_memory():
    """Welford states over a cluster were not measured: a variance over the
    outer axis keeps the split with partials in global memory."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        var, mean = fd.ops.var_mean(x, dims=[0], correction=1, keepdim=False)
        fd.add_output(var)
        fd.add_output(mean)
    params = params_of(fd.cuda_code_for([torch.randn(8192, 4096, dtype=torch.bfloat16)]))
    assert ", split" in params and "cluster" not in params


def test_outer_split_partials_are_planes_combined_in_groups():
    """An outer split keeps each accumulator field of its partial rows in a
    plane of packed columns: a thread's 8 columns of a Welford state's sum,
    m2 and count are one 32-byte store and load each, not 24 loads of 4
    bytes at a 24-byte stride. The last block of each group of 32 partial
    rows combines the group's, and the last of those the groups': no one
    block walks all 528 partial rows of a variance over 200704 x 256."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        var, mean = fd.ops.var_mean(fd.ops.cast(x, DataType.Float), dims=[0], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    code = fd.cuda_code_for([torch.randn(200704, 256, dtype=torch.bfloat16)])
    assert ", split" in params_of(code)
    kernel = code[code.index('extern "C" __global__') :]
    assert "constexpr int kSplitGroup = 32;" in kernel
    assert kernel.count("nvfuse::store_columns(") == 6  # 3 fields, 2 levels
    assert kernel.count("nvfuse::load_columns(") == 6
    assert "PartialLoader" not in kernel and "store_partial" not in kernel
    assert "for (int i = ty; col_valid && i < groups; i += kY)" in kernel
    assert "const int g = 0 + i * kSplitGroup;" in kernel
    assert kernel.count("arrive_last(") == 2
    helpers = code[code.index("void load_columns(") :]
    assert "ld.global.cg.v4.u32" in helpers[: helpers.index("\n}\n")]
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


def test_outer_welford_blocks_keep_256_threads():
    """A variance's Welford states take about 80 registers a thread: one
    block of 512 an SM, but three of 256."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        var, mean = fd.ops.var_mean(x, dims=[0], correction=1, keepdim=False)
        fd.add_output(var)
        fd.add_output(mean)
    code = fd.cuda_code_for([torch.randn(8192, 4096, dtype=torch.bfloat16)])
    assert "outer" in params_of(code) and "block=256 (32x8)" in params_of(code)


def test_outer_split_depth_is_a_tuning_knob_that_names_what_it_accepts():
    """outer_rows: the fewest rows a thread of an outer split walks. Fewer
    split the rows over more blocks (more partial rows)."""
    fd = define_case("sum_outer", torch.bfloat16)
    x = torch.randn(2048, 1024, dtype=torch.bfloat16)
    assert "split" in params_of(fd.cuda_code_for([x]))
    default = _C.reduction_tuning()
    assert default[8] == 8
    with pytest.raises(Exception, match="outer_rows must be at least 1, got 0"):
        _C.set_reduction_tuning(16, outer_rows=0)
    assert _C.reduction_tuning() == default


def test_unaligned_width_steps_the_vector_down():
    fd = define_case("softmax_fwd", torch.bfloat16)
    assert "vector_width=1" in params_of(
        fd.cuda_code_for([torch.randn(8, 1601, dtype=torch.bfloat16)])
    )
    assert "vector_width=2" in params_of(
        fd.cuda_code_for([torch.randn(8, 1602, dtype=torch.bfloat16)])
    )


def test_reduction_over_a_middle_axis_of_a_permuted_input():
    x = torch.randn(6, 5, 8).permute(0, 2, 1)  # reduce dim 1 (stride 1)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t, [1]))
    code = fd.cuda_code_for([x])
    assert "inner" in params_of(code)
    _C.nvrtc_compile(code, "nvfuse_reduction", 90)


def test_rows_of_several_axes_find_their_coordinates_by_magic_numbers():
    """A row index splits into coordinates by FastDividers with 32-bit
    indices (no hardware divide per thread); the GPU tests of every axis
    pattern check the values."""
    x = torch.randn(5, 3, 7, 33).transpose(0, 1)  # no two row axes merge
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t, [3]))
    code = fd.cuda_code_for([x])
    assert "row_rank=3" in params_of(code) and "index=int32" in params_of(code)
    assert "nvfuse::FastDivider row_divider[2];" in code
    assert code.count("nvfuse::fast_div(rest, args.row_divider[") == 2
    assert "rest % args.row_extent" not in code
    _C.nvrtc_compile(code, "nvfuse_reduction", 90)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["layer_norm_bwd", "rms_norm_bwd"])
def test_long_backward_rows_are_one_inner_outer_kernel_over_a_cluster(name, dtype):
    """Backward rows too long for one block: a cluster of 8 blocks holds each
    row and walks the rows together, each block accumulating the column
    partials of its own chunk (shared memory for a chunk, not the row; the
    staged bf16 layer-norm rows keep them in registers); fp32 rows no
    cluster holds are streamed by one (test_streamed_rows.py), or without
    that fall back to a kernel per reduction class."""
    fd = define_case(name, dtype)
    code = fd.cuda_code_for(cpu_inputs(name, 4, 65536, dtype))
    params = params_of(code)
    assert "inner_outer" in params and "cluster=8" in params
    assert len(kernels_of(code)) == 1 and "_finish(const Args args)" in code
    staged = name == "layer_norm_bwd" and dtype == torch.bfloat16
    assert (", staged" in params) == staged
    if staged:
        assert "nvfuse::Array<float, kVec> column_" in code and "column_shared" not in code
    else:
        assert "const Index shared_width = Index(kGroups) * kLanes * kVec;" in code
    assert "++cluster_round;" in code and ", cluster_round)" in code
    if name == "layer_norm_bwd":
        # Its two row sums pass the block and the cluster together: one
        # cluster barrier per row (one site, its slots alternating).
        assert "nvfuse::Pair<float, float> together" in code
        assert "cluster_reduce<kCluster, 1>" not in code
    for kernel in ("nvfuse_reduction", "nvfuse_reduction_finish"):
        assert _C.nvrtc_compile(code, kernel, 90)["bytes"] > 0
    wider = fd.cuda_code_for(cpu_inputs(name, 4, 262144, dtype))
    if dtype == torch.bfloat16:
        # No variance: a 16-block cluster holds 32 bf16 a thread.
        assert "inner_outer" in params_of(wider) and "cluster=16" in params_of(wider)
    else:
        params = params_of(wider)
        assert "chunked, inner_outer" in params and "cluster=16" in params
        with reduction_tuning(streamed_cluster=1):
            wider = fd.cuda_code_for(cpu_inputs(name, 4, 262144, dtype))
        assert len(kernels_of(wider)) == 2 and "inner_outer" not in wider


def test_finishing_kernels_wait_for_the_row_kernel():
    """The runtime launches an inner-outer kernel's finishing kernel as the
    row kernel's programmatic dependent (sm_90 on): its blocks are scheduled
    as the row kernel's blocks finish, so its first statement waits for the
    row kernel's partials. For older GPUs the wait is left out (#if), and
    the kernel still compiles (1024 rows: too few for the partial clusters,
    which an sm_80 schedule leaves out)."""
    fd = define_case("layer_norm_bwd", torch.bfloat16)
    code = fd.cuda_code_for(cpu_inputs("layer_norm_bwd", 1024, 4096, torch.bfloat16))
    assert "partial_cluster" not in params_of(code)
    finish = code[code.index("_finish(const Args args) {\n") :]
    assert (
        finish.split("\n")[1] == "  nvfuse::wait_for_previous_grid();  // the row kernel's partials"
    )
    assert code.count("nvfuse::wait_for_previous_grid();") == 1  # the row kernel waits on nothing
    for arch in (80, 90):
        assert _C.nvrtc_compile(code, "nvfuse_reduction_finish", arch)["bytes"] > 0


def test_column_sums_of_normalized_rows_are_one_inner_outer_kernel():
    # The outer reduction reads a phase-1 value (after the row sums).
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        rows = fd.ops.sum(t, [1], keepdim=True)
        fd.add_output(fd.ops.sum(t - rows, [0]))
    code = fd.cuda_code_for([torch.randn(4, 8)])
    assert "inner_outer" in params_of(code)
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0
    x = torch.randn(4, 8)
    (out,) = fd.execute([x])  # the CPU reference path
    torch.testing.assert_close(out, (x - x.sum(1, keepdim=True)).sum(0))


def test_reducing_a_reduced_value_is_two_reduction_kernels():
    # No one kernel reduces twice in a row: the merge segmenter cuts between.
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.sum(t, [0]), [0]))
    assert fd.segment_summary() == [("fused", ["sum"]), ("fused", ["sum"])]
    code = fd.cuda_code_for([torch.randn(4, 8)])
    assert code.count("// ReductionParams(") == 2
    x = torch.randn(4, 8)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.sum())


def _two_class_fusion(body):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        for out in body(fd, x):
            fd.add_output(out)
    return fd


def test_backward_is_one_inner_outer_kernel_with_a_finishing_kernel():
    fd = define_case("layer_norm_bwd", torch.bfloat16)
    code = fd.cuda_code_for(cpu_inputs("layer_norm_bwd", 4096, 4096, torch.bfloat16))
    assert len(kernels_of(code)) == 1
    assert "inner_outer" in params_of(code) and "vector_width=8" in params_of(code)
    assert "_finish(const Args args)" in code


@pytest.mark.parametrize("name", ["layer_norm_bwd", "rms_norm_bwd"])
def test_fp32_backward_rows_take_a_quarter_of_the_elements_a_thread(name):
    """Unstaged inner-outer rows of fp32 that one block holds at 4 elements
    a thread take that (one 16-byte group), not 16: more threads walk the
    rows. A row of 8192 (2048 threads at 4) keeps 16. bf16 RMS-norm rows
    of 1600 take half the elements (one group), 4096 their usual two."""

    def params(dtype, width):
        return params_of(define_case(name, dtype).cuda_code_for(cpu_inputs(name, 64, width, dtype)))

    for width, threads in [(1600, 512), (4096, 1024)]:
        assert f"threads_per_row={threads}, groups_per_thread=1, persistent, inner_outer" in params(
            torch.float32, width
        )
    assert "threads_per_row=512, groups_per_thread=4, persistent" in params(torch.float32, 8192)
    bf16 = {
        "layer_norm_bwd": "threads_per_row=256, groups_per_thread=1, persistent, "
        "inner_outer, staged",  # one group: its own rule
        "rms_norm_bwd": "threads_per_row=256, groups_per_thread=1, persistent, inner_outer,",
    }
    assert bf16[name] in params(torch.bfloat16, 1600)
    if name == "rms_norm_bwd":
        assert "threads_per_row=256, groups_per_thread=2, persistent, inner_outer," in params(
            torch.bfloat16, 4096
        )
    with reduction_tuning(elements_per_thread=32):  # the knob still moves it
        assert "threads_per_row=256, groups_per_thread=2" in params(torch.float32, 1600)


@pytest.mark.parametrize("width,columns_a_thread", [(4096, 4), (1601, 1)])
def test_finishing_kernel_loads_batches_of_partial_rows(width, columns_a_thread):
    """The finishing kernel's threads take 4 adjacent columns (a 16-byte load
    a partial row) where the rows' vectors are 4 wide or more, one column
    otherwise, and load kBatch partial rows of every reduction before they
    add them. The block takes 256 columns where a thread loads at most one
    batch of the partial rows, 32 (more threads down them) otherwise, as the
    launch computes it (finish_columns)."""
    fd = define_case("layer_norm_bwd", torch.float32)
    code = fd.cuda_code_for(cpu_inputs("layer_norm_bwd", 64, width, torch.float32))
    finish = code[code.index("_finish(const Args args)") :]
    assert "const int block_columns = args.partial_rows <= 32 ? 256 : 32;" in finish
    assert f"constexpr int kN = {columns_a_thread};" in finish
    assert "constexpr int kBatch = 4;" in finish
    loop = finish[finish.index("for (Index first = ty;") :]
    # Both reductions' loads precede the first add.
    assert loop.index("loaded_acc_t") < loop.index("()(acc_t")
    assert loop.count("loaded_acc_t") >= 4
    assert finish.count("nvfuse::column_reduce_shaped<512, kN>(") == 2
    assert _C.nvrtc_compile(code, "nvfuse_reduction_finish", 90)["bytes"] > 0


def test_row_and_column_sums_of_one_input_share_a_kernel():
    # Both classes feed only outputs: the one reducing the last axis is inner.
    fd = _two_class_fusion(
        lambda fd, x: [fd.ops.sum(x, dims=[1]), fd.ops.mul(fd.ops.sum(x, dims=[0]), 0.5)]
    )
    code = fd.cuda_code_for([torch.randn(64, 256)])
    assert len(kernels_of(code)) == 1 and "inner_outer" in params_of(code)
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


def test_column_result_feeding_elements_falls_back_to_segments():
    # x - sum(x, 0) needs the column result per element, which no kernel
    # walking rows has before the rows end: the sum over the contiguous
    # axis takes the column sums as an inner-outer kernel's outer results,
    # and the subtraction runs after it, as a pointwise kernel.
    def body(fd, x):
        columns = fd.ops.broadcast_in_dim(
            fd.ops.sum(x, dims=[0]), shape=[64, 256], broadcast_dims=[1]
        )
        return [fd.ops.sum(x, dims=[1]), fd.ops.sub(x, columns)]

    fd = _two_class_fusion(body)
    x = torch.randn(64, 256)
    rows, centered = fd.execute([x])
    assert [ops for _, ops in fd.segment_summary()] == [
        ["sum", "sum"],
        ["broadcast", "expand", "sub"],
    ]
    torch.testing.assert_close(rows, x.sum(1))
    torch.testing.assert_close(centered, x - x.sum(0))


def _phase0(code):
    start = code.index("// phase 0")
    return code[start : code.index("row_reduce", start)]


def test_held_rows_and_small_chunks_load_every_group_before_the_math():
    """A phase issues all its groups' loads in one loop and does the math
    in the next (else each group's loads waited for the previous group's
    values); a weight read per column stays with its math."""
    softmax = define_case("softmax_fwd", torch.bfloat16)
    phase = _phase0(softmax.cuda_code_for(cpu_inputs("softmax_fwd", 64, 8192, torch.bfloat16)))
    assert phase.count("for (int k = 0; k < kGroups; ++k)") == 2
    loads, math = phase.split("[[maybe_unused]] const Index col")
    assert "in_t0[k] = *reinterpret_cast" in loads and "MaxOp" in math and "MaxOp" not in loads
    sums = define_case("sum_inner", torch.bfloat16)  # a chunk of 4 x 16 bytes a thread
    loads, math = _phase0(
        sums.cuda_code_for(cpu_inputs("sum_inner", 16, 65536, torch.bfloat16))
    ).split("[[maybe_unused]] const Index col")
    assert "in_t0[k] = *reinterpret_cast" in loads and "SumOp" in math
    norm = define_case("layer_norm_fwd", torch.float32)
    code = norm.cuda_code_for(cpu_inputs("layer_norm_fwd", 64, 8192, torch.float32))
    phase1 = code[code.index("// phase 1") :]
    loads, math = phase1.split("[[maybe_unused]] const Index col", 1)
    assert "*reinterpret_cast" not in loads  # x is held; the weight and bias come late
    assert math.count("[k] = *reinterpret_cast") == 2
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


PTXAS_ENTRY = re.compile(
    r"Compiling entry function '(\w+)'.*?(\d+) bytes stack frame, (\d+) bytes spill stores"
    r".*?Used (\d+) registers",
    re.S,
)


def ptxas_resources(code, kernel="nvfuse_reduction"):
    """Each kernel's (registers, stack bytes, spilled bytes) from ptxas's
    report of the NVRTC compile that the GPU runs (NVRTC's ptxas does not
    pick the registers that nvcc's does for the same source)."""
    log = _C.nvrtc_compile(code, kernel, 90, ["--ptxas-options=-v"])["log"]
    return {
        m.group(1): (int(m.group(4)), int(m.group(2)), int(m.group(3)))
        for m in PTXAS_ENTRY.finditer(log)
    }


@pytest.mark.parametrize(
    "rows,width", [(64, 1600), (64, 8192), (64, 65536), (1, 65536), (64, 131072), (1, 262144)]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "name",
    [
        "layer_norm_fwd",
        "layer_norm_bwd",
        "rms_norm_fwd",
        "rms_norm_bwd",
        "softmax_fwd",
        "softmax_bwd",
        "log_softmax_fwd",
        "bias_residual_layer_norm_fwd",
    ],
)
def test_normalization_kernels_do_not_spill(name, dtype, rows, width):
    """No local memory (spills or stack) in the common normalizations'
    kernels, as NVRTC compiles them for the H100, without a GPU. A single
    row holds as many elements per thread as many rows do (its strides
    are all 0, its axes are not)."""
    code = define_case(name, dtype).cuda_code_for(cpu_inputs(name, rows, width, dtype))
    for kernel in kernels_of(code):
        resources = ptxas_resources(kernel)
        assert resources, "ptxas reported no kernel"
        for entry, (registers, stack, spilled) in resources.items():
            assert stack == 0 and spilled == 0, (
                entry,
                registers,
                stack,
                spilled,
                params_of(kernel),
            )


@pytest.mark.parametrize(
    "rows,width,held",
    [(2048, 1600, True), (8192, 4096, True), (16384, 1600, True), (4096, 65536, False)],
)
def test_staged_backward_rows_of_one_block_hold_the_column_inputs(rows, width, held):
    """bf16 layer-norm backward rows that one block stages and walks keep
    γ's elements of the block's columns in registers for every row it
    walks (read once a block, not once a row), without spilling; rows that
    a cluster holds do not (their registers hold the row)."""
    name = "layer_norm_bwd"
    code = define_case(name, torch.bfloat16).cuda_code_for(
        cpu_inputs(name, rows, width, torch.bfloat16)
    )
    params = params_of(code)
    assert ("hold_columns" in params) == held, params
    assert "inner_outer" in params
    for entry, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (entry, registers, stack, spilled)


@pytest.mark.parametrize("name", ["sum_inner", "var_mean_inner"])
def test_pure_reductions_take_the_usual_elements_a_thread(name):
    """A one-phase reduction (nothing held for a later phase, nothing
    written per element) takes the usual 16 elements a thread in bf16 (two
    16-byte groups) and fp32 (four): twice that measured no faster on the
    H100 at any shape and slower at some."""
    for dtype, groups in [(torch.bfloat16, 2), (torch.float32, 4)]:
        code = define_case(name, dtype).cuda_code_for(cpu_inputs(name, 8192, 4096, dtype))
        assert f"threads_per_row=256, groups_per_thread={groups}, persistent" in params_of(code)
        assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.parametrize("count", [1, 4, 8, 20, 40])
@pytest.mark.parametrize(
    "dtype,torch_dtype", [(DataType.BFloat16, torch.bfloat16), (DataType.Float, torch.float32)]
)
def test_many_column_sums_compile_without_spills(count, dtype, torch_dtype):
    """Independent column sums in one outer kernel (a backward's bias
    gradients, grouped) fit their accumulators and loads in flight into
    the block's registers: fewer row steps a batch, then narrower vectors,
    as the inputs grow. One sum keeps the widest vector and four steps."""
    rows, width = 12608, 768
    fd = define_column_sums(count, rows, width, dtype)
    code = fd.cuda_code_for([torch.zeros(rows, width, dtype=torch_dtype)] * count)
    params = params_of(code)
    assert "outer" in params
    if count == 1:
        assert "outer_batch=4" in params and f"vector_width={16 // torch_dtype.itemsize}" in params
    for entry, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (entry, registers, stack, spilled, params)
