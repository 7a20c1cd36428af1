"""Scatter as a generated kernel (codegen/coordinate_scatter.cpp): the
coordinate kernel walks the index tensor, computing index and src (and the
work that makes them) at each element and writing src's value into a copy
of the scatter's input. Without a GPU the kernels are compiled by NVRTC and
the CPU reference path is checked against torch; on a GPU each case runs as
that kernel against torch."""

import re

import pytest
import torch

import nvfuse
from nvfuse import _C, DataType, FusionDefinition
from fusion_helpers import DEVICES, assert_close, make_input

NV = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
    torch.float64: DataType.Double,
    torch.int64: DataType.Int,
    torch.int32: DataType.Int32,
}


def _plain(fd, src):
    return src


def _relu_doubled(fd, src):
    return fd.ops.mul(fd.ops.relu(src), 2.0)


def _plain_torch(src):
    return src


def _relu_doubled_torch(src):
    return (torch.relu(src.double()) * 2.0).to(src.dtype)  # exact in every dtype


# name -> (input shape, index shape, src shape, dim, dtype, index dtype,
#          src body, torch src body)
CASES = {
    "dim1_fp32": ((4, 16), (4, 8), (4, 8), 1, torch.float32, torch.int64, _plain, _plain_torch),
    "dim0_fp32": (
        (64, 12),
        (40, 12),
        (40, 12),
        0,
        torch.float32,
        torch.int64,
        _plain,
        _plain_torch,
    ),
    "middle_bf16": (
        (3, 50, 16),
        (3, 20, 16),
        (3, 20, 16),
        1,
        torch.bfloat16,
        torch.int64,
        _relu_doubled,
        _relu_doubled_torch,
    ),
    "last_int32_index": (
        (6, 100),
        (6, 33),
        (6, 33),
        1,
        torch.float32,
        torch.int32,
        _relu_doubled,
        _relu_doubled_torch,
    ),
    # index smaller than src (and than the input) along other axes too
    "src_larger": (
        (8, 20),
        (5, 7),
        (6, 9),
        1,
        torch.float32,
        torch.int64,
        _relu_doubled,
        _relu_doubled_torch,
    ),
    "rank1_half": ((1000,), (300,), (300,), 0, torch.float16, torch.int64, _plain, _plain_torch),
    "last_bf16_wide": (
        (16, 4096),
        (16, 2048),
        (16, 2048),
        1,
        torch.bfloat16,
        torch.int64,
        _relu_doubled,
        _relu_doubled_torch,
    ),
    # 4 lanes of doubles (the int32 index's width): 32-byte row vectors
    "last_double_int32_index": (
        (4, 64),
        (4, 16),
        (4, 16),
        1,
        torch.float64,
        torch.int32,
        _relu_doubled,
        _relu_doubled_torch,
    ),
    # a row of 99: staged and copied element by element
    "last_odd_row": (
        (5, 99),
        (5, 32),
        (5, 32),
        1,
        torch.float32,
        torch.int64,
        _plain,
        _plain_torch,
    ),
}


def _unique_index(in_shape, index_shape, dim, dtype, device):
    """Distinct positions along `dim` for every line of the index, so the
    result does not depend on which of two writes lands."""
    shape = list(index_shape)
    shape[dim] = in_shape[dim]
    keys = torch.rand(shape, device=device)
    positions = torch.argsort(keys, dim=dim).narrow(dim, 0, index_shape[dim])
    # the other axes of index may be shorter than the input's
    return positions.to(dtype).contiguous()


def _inputs(name, device):
    in_shape, index_shape, src_shape, dim, dtype, index_dtype, _, _ = CASES[name]
    x = make_input(in_shape, dtype, device=device)
    index = _unique_index(in_shape, index_shape, dim, index_dtype, device)
    src = make_input(src_shape, dtype, device=device)
    return x, index, src


def _define(name):
    in_shape, index_shape, src_shape, dim, dtype, index_dtype, body, _ = CASES[name]
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1] * len(in_shape), contiguity=True, dtype=NV[dtype])
        i = fd.define_tensor([-1] * len(index_shape), contiguity=True, dtype=NV[index_dtype])
        s = fd.define_tensor([-1] * len(src_shape), contiguity=True, dtype=NV[dtype])
        fd.add_output(fd.ops.scatter(x, i, body(fd, s), dim))
    return fd


def _expected(name, x, index, src):
    dim, torch_body = CASES[name][3], CASES[name][7]
    return x.scatter(dim, index.long(), torch_body(src))


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_one_kernel_that_nvrtc_compiles(name):
    fd = _define(name)
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    code = fd.cuda_code_for(list(_inputs(name, "cpu")))
    assert "nvfuse::scatter_index(" in code
    compiled = _C.nvrtc_compile(code, "nvfuse_coordinates", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name, device):
    x, index, src = _inputs(name, device)
    fd = _define(name)
    (out,) = fd.execute([x, index, src])
    expected = _expected(name, x, index, src)
    assert torch.equal(out, expected)
    if device == "cuda":
        assert "nvfuse::scatter_index(" in fd.last_cuda_code()


def test_a_scatter_along_the_last_axis_stages_rows_in_shared_memory():
    fd = _define("dim1_fp32")
    code = fd.cuda_code_for(list(_inputs("dim1_fp32", "cpu")))
    assert "scatter_rows" in code
    body = code.split("void group(")[1]
    # src and index load as vectors at the index's own coordinates ...
    assert "load_read_only" in body and "kVec = 4" in code
    # ... each lane writes where its index points, if in range, into the
    # staged row; the block copies the input's row in and the row out.
    assert re.search(r"if \(v\d+\.val\[l\] >= 0\) nvfuse_row<float>\(\)\[", body)
    assert "group(args, r * row_groups + j);" in body
    assert body.count("__syncthreads();") == 3
    # a thread per vector of the row (16 floats: 4), at least a warp
    assert "block=32," in code
    wide = _define("last_bf16_wide").cuda_code_for(list(_inputs("last_bf16_wide", "cpu")))
    assert "block=512," in wide and "scatter_rows" in wide


def test_other_scatters_write_each_lane_into_a_copy_of_the_input():
    # along axis 0, and along the last axis where the index is shorter than
    # the input on another axis or a row would not fit in shared memory
    for name in ("dim0_fp32", "src_larger", "middle_bf16"):
        code = _define(name).cuda_code_for(list(_inputs(name, "cpu")))
        assert "scatter_rows" not in code
        assert re.search(r"if \(v\d+\.val\[l\] >= 0\) args\.t\d+\[", code)
    x = torch.zeros(2, 20000)
    index = torch.zeros(2, 8, dtype=torch.int64)
    code = _define("dim1_fp32").cuda_code_for([x, index, torch.zeros(2, 8)])
    assert "scatter_rows" not in code


# --- segmentation ------------------------------------------------------------


def test_work_on_the_scatters_input_and_result_runs_in_other_kernels():
    # The input must be whole before the first write, and the result read
    # after the last: exp, then relu/mul/scatter, then add.
    x, index, src = _inputs("dim1_fp32", "cpu")
    with FusionDefinition() as fd:
        t, i, s = fd.from_pytorch(x), fd.from_pytorch(index), fd.from_pytorch(src)
        r = fd.ops.scatter(fd.ops.exp(t), i, _relu_doubled(fd, s), 1)
        fd.add_output(fd.ops.add(r, 1.0))
    assert [ops for _, ops in fd.segment_summary()] == [
        ["exp"],
        ["relu", "mul", "scatter"],
        ["add"],
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_a_chain_of_scatters_is_one_kernel_each(device):
    x, index, src = _inputs("dim1_fp32", device)
    with FusionDefinition() as fd:
        t, i, s = fd.from_pytorch(x), fd.from_pytorch(index), fd.from_pytorch(src)
        first = fd.ops.scatter(t, i, s, 1)
        fd.add_output(fd.ops.scatter(first, i, fd.ops.neg(s), 1))
    assert [ops for _, ops in fd.segment_summary()] == [["scatter"], ["neg", "scatter"]]
    (out,) = fd.execute([x, index, src])
    assert torch.equal(out, x.scatter(1, index, src).scatter(1, index, -src))


@pytest.mark.parametrize("device", DEVICES)
def test_two_scatters_sharing_an_index_are_two_kernels(device):
    x, index, src = _inputs("dim1_fp32", device)
    y = make_input(x.shape, torch.float32, device=device)
    with FusionDefinition() as fd:
        t, u = fd.from_pytorch(x), fd.from_pytorch(y)
        i, s = fd.from_pytorch(index), fd.from_pytorch(src)
        fd.add_output(fd.ops.scatter(t, i, s, 1))
        fd.add_output(fd.ops.scatter(u, i, s, 1))
    assert [ops for _, ops in fd.segment_summary()] == [["scatter"], ["scatter"]]
    a, b = fd.execute([x, y, index, src])
    assert torch.equal(a, x.scatter(1, index, src))
    assert torch.equal(b, y.scatter(1, index, src))


@pytest.mark.parametrize("device", DEVICES)
def test_a_scatter_next_to_a_reduction_is_its_own_kernel(device):
    x, index, src = _inputs("dim1_fp32", device)
    with FusionDefinition() as fd:
        t, i, s = fd.from_pytorch(x), fd.from_pytorch(index), fd.from_pytorch(src)
        fd.add_output(fd.ops.sum(fd.ops.scatter(t, i, s, 1), [1]))
    assert [kind for kind, _ in fd.segment_summary()] == ["aten", "fused"]
    (out,) = fd.execute([x, index, src])
    assert_close(out, x.scatter(1, index, src).sum(1))
    if device == "cuda":
        assert "nvfuse::scatter_index(" in fd.last_cuda_code()


@pytest.mark.parametrize("device", DEVICES)
def test_a_transposed_input_is_copied_as_it_is_laid_out(device):
    x, index, src = _inputs("dim1_fp32", device)
    xt = x.t().contiguous().t()  # column-major
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True, stride_order=[0, 1])
        i, s = fd.from_pytorch(index), fd.from_pytorch(src)
        fd.add_output(fd.ops.scatter(t, i, s, 1))
    (out,) = fd.execute([xt, index, src])
    assert torch.equal(out, x.scatter(1, index, src))


@pytest.mark.parametrize("device", DEVICES)
def test_an_in_place_scatter_updates_the_callers_tensor(device):
    x, index, src = _inputs("dim1_fp32", device)
    expected = x.scatter(1, index, src)
    with FusionDefinition() as fd:
        t, i, s = fd.from_pytorch(x), fd.from_pytorch(index), fd.from_pytorch(src)
        fd.add_output(fd.ops.scatter(t, i, s, 1), alias_input=t)
    fd.execute([x, index, src])
    assert torch.equal(x, expected)


# --- sizes and indices torch rejects -----------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "index_shape, src_shape, message",
    [
        ((4, 8), (4, 6), "index has size 8 at axis 1 but src only 6"),
        ((5, 2), (5, 2), "index has size 5 at axis 0 but the input only 4"),
    ],
    ids=["larger_than_src", "larger_than_the_input_off_dim"],
)
def test_an_index_torch_rejects_is_an_input_error(index_shape, src_shape, message, device):
    x = make_input((4, 16), torch.float32, device=device)
    index = torch.zeros(index_shape, dtype=torch.int64, device=device)
    src = make_input(src_shape, torch.float32, device=device)
    fd = _define("dim1_fp32")
    with pytest.raises(nvfuse.InputError, match=message):
        fd.execute([x, index, src])
    # nothing left behind: the next call runs
    index = _unique_index((4, 16), (4, 6), 1, torch.int64, device)
    src = make_input((4, 6), torch.float32, device=device)
    (out,) = fd.execute([x, index, src])
    assert torch.equal(out, x.scatter(1, index, src))


@pytest.mark.gpu
def test_out_of_range_indices_write_nothing_and_negative_ones_wrap_once():
    # torch raises (a device assert on CUDA); the kernel must not write
    # outside the tensor, nor clamp onto an element in range.
    x = make_input((2, 8), torch.float32, device="cuda")
    index = torch.tensor([[8, -1, 100, 3], [-9, -8, 0, 7]], device="cuda")
    src = make_input((2, 4), torch.float32, device="cuda")
    fd = _define("dim1_fp32")
    (out,) = fd.execute([x, index, src])
    expected = x[0].clone()
    expected[7] = src[0, 1]  # -1 wraps to 7; 8 and 100 are out of range
    expected[3] = src[0, 3]
    assert out[0].tolist() == expected.tolist()
    # -9 is out of range; -8 wraps to 0, where index 0 writes too
    assert out[1, 0] in (src[1, 1], src[1, 2])
    assert out[1, 7] == src[1, 3]
    assert out[1, 1:7].tolist() == x[1, 1:7].tolist()
    torch.cuda.synchronize()  # the context is healthy
