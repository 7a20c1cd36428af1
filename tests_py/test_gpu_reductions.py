"""Reductions and normalizations on the GPU against torch on the GPU.

- Every case of norm_definitions (sums, var_mean, softmax, log-softmax,
  layer norm and RMS norm forward/backward, bias + residual + layer norm),
  fp32 and bf16, at widths 1 to 262144, with a large and an odd row count.
- Every reduction op x dtype x axis pattern of a 3-D tensor, keepdim or not.
- No register spills in the normalization kernels (once kernel info exists).

Each run also checks that a generated kernel computed it (assert_kernel_ran),
not the ATen reference evaluator. Outputs are poisoned before each launch
(conftest), so an element a kernel skips fails the comparison.
"""

import math

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition
from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype
from fusion_helpers import make_input, params_of, run_fusion
from workloads.norm_definitions import (
    CASES,
    assert_case_close,
    check_case,
    reduction_tuning,
    run_case,
    with_nan_and_inf,
)

pytestmark = pytest.mark.gpu


def assert_kernel_ran(fd):
    """The last execute of `fd` launched a generated kernel. Generated
    kernels are named nvfuse_<kind>_<tactic> (nvfuse_pointwise_vec8, ...); change this one
    check if the naming changes."""
    code = fd.last_cuda_code()
    assert "nvfuse_" in code, "no generated kernel ran: the fusion went to the reference evaluator"


# --- the normalization cases -----------------------------------------------

WIDTHS = [1, 7, 127, 1600, 4096, 50257, 65536, 262144]
DTYPES = [torch.float32, torch.bfloat16]


def rows_for(width):
    """Rows keeping a [rows, width] tensor at most 8M elements (32 MB fp32)."""
    return max(1, min(512, (8 << 20) // width))


SHAPES = sorted(
    {(rows_for(w), w) for w in WIDTHS} | {(3, w) for w in WIDTHS}, key=lambda s: (s[1], s[0])
)


@pytest.mark.parametrize("rows,width", SHAPES, ids=lambda s: str(s))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_torch_on_gpu(name, dtype, rows, width):
    assert_kernel_ran(check_case(name, dtype, rows, width, "cuda"))


@pytest.mark.parametrize("width", [7, 1600, 65536, 262144])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["softmax_fwd", "log_softmax_fwd", "layer_norm_fwd"])
def test_nan_and_inf_rows_match_torch_on_gpu(name, dtype, width):
    torch.manual_seed(width)
    rows = 5
    inputs = CASES[name].make_inputs(rows, width, dtype, "cuda")
    x = inputs[0] = with_nan_and_inf(inputs[0])
    outs, fd = run_case(name, inputs)
    expected = CASES[name].torch_reference(*inputs)
    if name == "layer_norm_fwd":
        # The mean of a row holding +inf is +inf, as torch.mean says; torch's
        # CUDA layer norm (a running-mean Welford) reports NaN there. nvfuse
        # keeps the sum in its Welford states and returns the inf.
        expected[1] = x.float().mean(-1, keepdim=True)
    assert_case_close(name, outs, expected, rows, width, equal_nan=True)
    assert torch.isfinite(outs[0][[0, 2, 4]].float()).all()
    assert_kernel_ran(fd)


@pytest.mark.parametrize("width", [1600, 4096, 65536, 262144])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["layer_norm_fwd", "layer_norm_bwd", "softmax_fwd"])
def test_no_register_spills(name, dtype, width):
    """The kernels of the common normalizations keep everything in
    registers (and shared memory): no local-memory spills."""
    torch.manual_seed(width)
    rows = rows_for(width)
    inputs = CASES[name].make_inputs(rows, width, dtype, "cuda")
    _, fd = run_case(name, inputs)
    assert_kernel_ran(fd)
    info = fd.last_kernel_info()
    assert info["local_bytes"] == 0, info


@pytest.mark.parametrize("width", [131072, 65536])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["layer_norm_fwd", "softmax_fwd", "rms_norm_bwd"])
def test_no_register_spills_in_cluster_rows(name, dtype, width):
    """Long rows held by a cluster of blocks (in registers, or staged in
    shared memory: bf16 layer norm and softmax, 4 blocks at 65536) use no
    local memory; a row that would hold more than 128 bytes per thread in
    8 blocks (fp32 RMS-norm backward at 131072: two inputs) takes 16; bf16
    softmax (no variance) takes half the blocks of twice the elements."""
    torch.manual_seed(width)
    inputs = CASES[name].make_inputs(4, width, dtype, "cuda")
    _, fd = run_case(name, inputs)
    sixteen = name == "rms_norm_bwd" and dtype == torch.float32 and width == 131072
    staged_four = name != "rms_norm_bwd" and dtype == torch.bfloat16 and width == 65536
    blocks = 16 if sixteen else 4 if staged_four else 8
    if name == "softmax_fwd" and dtype == torch.bfloat16:
        blocks //= 2
    assert f"cluster={blocks}" in fd.last_cuda_code()
    assert fd.last_kernel_info()["local_bytes"] == 0, fd.last_kernel_info()


PIPELINED_CASES = [
    "layer_norm_fwd",
    "rms_norm_fwd",
    "softmax_fwd",
    "softmax_bwd",
    "log_softmax_fwd",
    "var_mean_inner",
    "sum_inner",
]


@pytest.mark.parametrize("width", [7, 1600, 4096])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", PIPELINED_CASES)
def test_pipelined_rows_match_torch_on_gpu(name, dtype, width):
    """Rows pipelined (forced): one wave of blocks walks the rows (at width 7
    128 rows per block), loading each next row while reducing this one.
    Rows that hold more than 64 bytes per thread (fp32 with two inputs)
    are not pipelined; the pure reductions' 16 fp32 elements are 64."""
    rows = 40003 if width < 32 else 1003
    with reduction_tuning(pipelining=2):
        fd = check_case(name, dtype, rows, width, "cuda")
    holds_too_much = dtype == torch.float32 and width > 7 and name == "softmax_bwd"
    assert ("pipelined" in fd.last_cuda_code()) != holds_too_much


STAGED_CASES = [
    "layer_norm_fwd",
    "rms_norm_fwd",
    "softmax_fwd",
    "softmax_bwd",
    "log_softmax_fwd",
    "bias_residual_layer_norm_fwd",
    "layer_norm_bwd",
    "rms_norm_bwd",
]


@pytest.mark.parametrize(
    "rows,width",
    [(40003, 7), (1003, 1600), (301, 8192), (37, 65536), (1, 262144), (19, 262144)],
    ids=str,
)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", STAGED_CASES)
def test_staged_rows_match_torch_on_gpu(name, dtype, rows, width):
    """Rows staged in shared memory (forced): one wave of blocks or clusters
    walks the rows, each thread copying its groups of the next row (cp.async)
    while the current row computes; row counts that leave the last walk
    partly empty, and a single row. The backward norms (inner-outer) keep
    their column partials in registers. Not staged: a bf16 row of width 7
    (one 2-byte element a group, below cp.async's 4), and fp32 rows of
    262144 with two held inputs (more than a 16-block cluster holds:
    chunked)."""
    with reduction_tuning(staging=2):
        fd = check_case(name, dtype, rows, width, "cuda")
    unstaged = (dtype == torch.bfloat16 and width == 7) or (
        dtype == torch.float32
        and width == 262144
        and name
        in ("softmax_bwd", "bias_residual_layer_norm_fwd", "layer_norm_bwd", "rms_norm_bwd")
    )
    assert (", staged" in fd.last_cuda_code()) != unstaged
    assert fd.last_kernel_info()["local_bytes"] == 0, fd.last_kernel_info()


def test_cluster_rows_match_torch_with_nan_rows():
    """A NaN in one block's part of a cluster row reaches every block's
    results; the other rows stay finite."""
    torch.manual_seed(0)
    inputs = CASES["softmax_fwd"].make_inputs(5, 65536, torch.float32, "cuda")
    inputs[0][1, 65000] = float("nan")
    outs, fd = run_case("softmax_fwd", inputs)
    assert "cluster=8" in fd.last_cuda_code()
    assert torch.isnan(outs[0][1]).all()
    torch.testing.assert_close(outs[0][[0, 2, 3, 4]], torch.softmax(inputs[0][[0, 2, 3, 4]], -1))


# --- every reduction op x dtype x axis pattern -------------------------------

RED_DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32, torch.int64]
RED_OPS = ["sum", "prod", "max", "min", "var", "var_mean", "mean"]
AXES = [[2], [1], [0], [0, 2], [1, 2], [0, 1, 2]]
SHAPE_3D = (37, 129, 257)  # ~1.2M elements, no axis a power of two
# A product of 1.2M factors over- or underflows whatever its order; a
# smaller tensor keeps float products finite and comparable.
PROD_SHAPE_3D = (9, 17, 33)


def _prod(x, dims, keepdim):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d, keepdim=keepdim)
    return x


TORCH_OPS = {
    "sum": lambda x, dims, keepdim: [torch.sum(x, dims, keepdim=keepdim)],
    "prod": lambda x, dims, keepdim: [_prod(x, dims, keepdim)],
    "max": lambda x, dims, keepdim: [torch.amax(x, dims, keepdim=keepdim)],
    "min": lambda x, dims, keepdim: [torch.amin(x, dims, keepdim=keepdim)],
    "var": lambda x, dims, keepdim: [torch.var(x, dims, keepdim=keepdim)],
    "var_mean": lambda x, dims, keepdim: list(torch.var_mean(x, dims, keepdim=keepdim)),
    "mean": lambda x, dims, keepdim: [torch.mean(x, dims, keepdim=keepdim)],
}


def _nvfuse_op(fd, op, t, dims, keepdim):
    outs = getattr(fd.ops, op)(t, dims=dims, keepdim=keepdim)
    return list(outs) if isinstance(outs, tuple) else [outs]


def _reduction_input(op, shape, dtype):
    if op == "prod":
        if dtype.is_floating_point:
            return make_input(shape, dtype, 0.9, 1.1, device="cuda")
        # Odd factors: the product wraps modulo 2^64 (torch multiplies
        # integers in int64) but never becomes 0, and wrapping products are
        # the same in any order.
        return make_input(shape, dtype, -2, 2, device="cuda") * 2 + 1
    return make_input(shape, dtype, device="cuda")


def _assert_reduction_close(actual, expected, reduced_numel):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype in (torch.bfloat16, torch.float16):
        torch.testing.assert_close(actual.float(), expected.float(), rtol=1.6e-2, atol=1e-2)
    elif expected.dtype == torch.float32:
        # Sums in another order: the rounding error of a sum of n terms of
        # size ~1 grows like sqrt(n) and matters where the sum cancels.
        torch.testing.assert_close(
            actual, expected, rtol=1e-4, atol=1e-5 * math.sqrt(reduced_numel)
        )
    else:  # float64 at torch's default tolerance; integers exactly
        torch.testing.assert_close(actual, expected)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", AXES, ids=str)
@pytest.mark.parametrize("dtype", RED_DTYPES, ids=str)
@pytest.mark.parametrize("op", RED_OPS)
def test_reduction_matches_torch_on_gpu(op, dtype, dims, keepdim):
    torch.manual_seed(len(dims) * 7 + dims[0])
    shape = PROD_SHAPE_3D if op == "prod" else SHAPE_3D
    x = _reduction_input(op, shape, dtype)
    is_integer = not dtype.is_floating_point
    if is_integer and op in ("var", "var_mean", "mean"):
        # torch rejects these for integers; so must nvfuse, when defining.
        with pytest.raises(RuntimeError):
            TORCH_OPS[op](x, dims, keepdim)
        with pytest.raises(nvfuse.DefinitionTypeError):
            run_fusion(lambda fd, t: _nvfuse_op(fd, op, t, dims, keepdim), [x])
        return
    outs, fd = run_fusion(lambda fd, t: _nvfuse_op(fd, op, t, dims, keepdim), [x])
    if dtype in (torch.bfloat16, torch.float16):
        # nvfuse reduces half precision in float and rounds once, as torch's
        # CUDA kernels do; compare against that.
        expected = [e.to(dtype) for e in TORCH_OPS[op](x.float(), dims, keepdim)]
    else:
        expected = TORCH_OPS[op](x, dims, keepdim)
    reduced_numel = math.prod(shape[d] for d in dims)
    assert len(outs) == len(expected)
    for out, ref in zip(outs, expected):
        _assert_reduction_close(out, ref, reduced_numel)
    if dims == [0, 2]:
        # Reduced axes that are not adjacent in memory (kept axis between
        # them) are not one strided axis: the reduction scheduler declines
        # them and the reference evaluator runs on the GPU (docs/gpu.md).
        assert fd.last_cuda_code() == ""
    else:
        assert_kernel_ran(fd)


@pytest.mark.parametrize("outer_rows", [1, 2, 8, 16])
@pytest.mark.parametrize("rows,width", [(2048, 1600), (20011, 72), (601, 4104)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_outer_split_sums_match_torch_at_any_split_depth(dtype, rows, width, outer_rows):
    """Column sums split over blocks down the rows, at least outer_rows rows
    a thread before a deeper split; the last block to arrive combines the
    partials."""
    torch.manual_seed(rows + outer_rows)
    inputs = CASES["sum_outer"].make_inputs(rows, width, dtype, "cuda")
    with reduction_tuning(outer_rows=outer_rows):
        outs, fd = run_case("sum_outer", inputs)
    params = params_of(fd.last_cuda_code())
    assert params.startswith("outer") and (", split" in params or ", cluster=8" in params)
    assert_case_close("sum_outer", outs, CASES["sum_outer"].torch_reference(*inputs), rows, width)


@pytest.mark.parametrize("rows,width", [(4096, 65536), (777, 34824), (3, 40000)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_wide_outer_sums_walk_every_row_unsplit_and_match_torch(dtype, rows, width):
    """Column blocks that alone put one on every SM walk all the rows with
    no split (no partials, no counter): rows that do not fill the last row
    step, a last column group partly past the edge (34824, 40000)."""
    torch.manual_seed(rows + width)
    inputs = CASES["sum_outer"].make_inputs(rows, width, dtype, "cuda")
    outs, fd = run_case("sum_outer", inputs)
    params = params_of(fd.last_cuda_code())
    assert params.startswith("outer") and ", split" not in params and "cluster" not in params
    assert_case_close("sum_outer", outs, CASES["sum_outer"].torch_reference(*inputs), rows, width)


@pytest.mark.parametrize(
    "rows,width,dtype",
    [
        (8192, 4096, torch.bfloat16),
        (1000, 3000, torch.bfloat16),
        (2048, 1600, torch.float32),
        (7777, 1100, torch.float32),
        (8192, 2000, torch.float32),
        (8192, 4224, torch.bfloat16),
    ],
    ids=str,
)
def test_outer_reductions_over_a_cluster_match_torch(rows, width, dtype):
    """Column sums and maxes split over the 8 blocks of a cluster, combined
    in block rank 0's shared memory, with a per-column input in the
    epilogue; rows that do not fill the last row step, (8192 x 2000) a
    last column group that is partly past the edge, and (8192 x 4224) a
    grid of two blocks an SM."""
    nv_dtype = torch_dtype_to_nvfuse_dtype(dtype)
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=nv_dtype)
        scale = fd.define_tensor(shape=[-1], contiguity=[True], dtype=nv_dtype)
        xf = fd.ops.cast(x, DataType.Float)
        sums = fd.ops.mul(fd.ops.sum(xf, dims=[0]), fd.ops.cast(scale, DataType.Float))
        fd.add_output(fd.ops.cast(sums, nv_dtype))
        fd.add_output(fd.ops.max(x, dims=[0]))
    torch.manual_seed(rows + width)
    x = torch.randn(rows, width, device="cuda").to(dtype)
    scale = torch.rand(width, device="cuda").to(dtype)
    got_sums, got_max = fd.execute([x, scale])
    # The kernel's parameter line: the device runtime before it mentions splits.
    params = params_of(fd.last_cuda_code())
    assert ", cluster=8" in params and ", split" not in params
    expected = (x.float().sum(0) * scale.float()).to(dtype)
    torch.testing.assert_close(got_sums.float(), expected.float(), rtol=2e-2, atol=1e-3 * rows**0.5)
    torch.testing.assert_close(got_max, x.amax(0))


# --- inner-outer: row and column reductions in one kernel ---------------------


@pytest.mark.parametrize(
    "rows,width",
    [
        (1, 8),
        (3, 1600),
        (20000, 256),
        (4099, 4096),
        (5003, 1601),
        (32, 4096),
        (33, 4096),
        (29, 1601),
    ],
)
def test_inner_outer_row_and_column_sums_match_torch(rows, width):
    """Blocks walk the rows grid-stride (several rows per block when rows
    outnumber one wave) and a second kernel combines their column partials
    (4 columns a thread, or at width 1601 one). A block per row below 132
    rows: up to 32 partial rows take the wide finishing kernel, 33 the
    tall one."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        row_sums = fd.ops.sum(x, dims=[1], keepdim=True)
        fd.add_output(fd.ops.sub(x, row_sums))
        fd.add_output(fd.ops.mul(fd.ops.sum(fd.ops.sub(x, row_sums), dims=[0]), 0.5))
        fd.add_output(fd.ops.max(x, dims=[0]))
    torch.manual_seed(rows)
    x = torch.randn(rows, width, device="cuda")
    centered, column_half_sums, column_max = fd.execute([x])
    expected = x - x.sum(1, keepdim=True)
    # Row sums of `width` normals in another order: ~1e-5 apart.
    torch.testing.assert_close(centered, expected, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(
        column_half_sums, expected.sum(0) * 0.5, rtol=1e-4, atol=1e-3 * rows**0.5
    )
    torch.testing.assert_close(column_max, x.amax(0))
    assert "inner_outer" in fd.last_cuda_code()
    assert "_finish(const Args args)" in fd.last_cuda_code()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layer_norm_backward_is_one_inner_outer_kernel_on_gpu(dtype):
    fd = check_case("layer_norm_bwd", dtype, 8192, 4096, "cuda")
    code = fd.last_cuda_code()
    assert "inner_outer" in code and "nvfuse segment" not in code
    # No cluster holds fp32 rows of 262144 (over 128 bytes a thread in 16
    # blocks): a 16-block cluster streams them (test_streamed_rows.py);
    # bf16 rows are held by 16 blocks. Without streaming: the fallback, a
    # kernel per reduction class.
    fd = check_case("layer_norm_bwd", dtype, 64, 262144, "cuda")
    code = fd.last_cuda_code()
    assert "inner_outer" in code and "nvfuse segment" not in code
    assert (", chunked" in code) == (dtype == torch.float32)
    with reduction_tuning(streamed_cluster=1):
        fd = check_case("layer_norm_bwd", dtype, 64, 262144, "cuda")
    assert ("nvfuse segment" in fd.last_cuda_code()) == (dtype == torch.float32)


@pytest.mark.parametrize("rows", [1, 37, 301])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["layer_norm_bwd", "rms_norm_bwd"])
def test_long_backward_rows_walked_by_clusters_match_torch(name, dtype, rows):
    """Rows of 65536 held by a cluster of 8 blocks that walks rows (several
    per cluster at 301 rows: each cluster reduction alternates its slots
    between rounds) with the column partials in each block's shared
    memory (bf16 layer norm: staged, in registers): one inner-outer kernel
    and its finishing kernel."""
    fd = check_case(name, dtype, rows, 65536, "cuda")
    code = fd.last_cuda_code()
    assert "inner_outer" in code and "cluster=8" in code and "nvfuse segment" not in code
    assert fd.last_kernel_info()["local_bytes"] == 0, fd.last_kernel_info()


@pytest.mark.parametrize("rows,width", [(513, 7), (300, 1600), (8, 65536)])
def test_reductions_of_one_phase_reduced_together_match_torch(rows, width):
    """A sum, a max, an integer sum and a min of the same rows, each scaled
    back into the row (a second phase): the four pass the lanes, the block
    and (at 65536) the cluster as one nested pair."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        n = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int32)
        shape = [rows, width]
        stats = [
            fd.ops.sum(x, dims=[1]),
            fd.ops.max(x, dims=[1]),
            fd.ops.cast(fd.ops.sum(n, dims=[1]), DataType.Float),
            fd.ops.min(x, dims=[1]),
        ]
        out = x
        for s in stats:
            out = fd.ops.add(out, fd.ops.broadcast_in_dim(s, shape=shape, broadcast_dims=[0]))
        fd.add_output(out)
    torch.manual_seed(width)
    x = torch.randn(rows, width, device="cuda")
    n = torch.randint(-1000, 1000, (rows, width), device="cuda", dtype=torch.int32)
    (out,) = fd.execute([x, n])
    expected = (
        x
        + x.sum(1, keepdim=True)
        + x.amax(1, keepdim=True)
        + n.sum(1, keepdim=True).float()
        + x.amin(1, keepdim=True)
    )
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-3)
    code = fd.last_cuda_code()
    assert "nvfuse::Pair<float, nvfuse::Pair<float, nvfuse::Pair<nvfuse::int64, float>>>" in code
    assert ("cluster=8" in code) == (width == 65536)
