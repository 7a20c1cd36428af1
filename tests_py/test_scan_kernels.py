"""The scan kernel: cumsums along one axis with the elementwise work before
and after them in one generated kernel (codegen/scan_codegen.h). Without a
GPU the kernel is compiled by NVRTC and the CPU reference path checked
against torch; on a GPU each case runs as that kernel against torch."""

import pytest
import torch

from nvfuse import _C, DataType, FusionDefinition
from fusion_helpers import DEVICES, assert_close, make_input

NV = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.int64: DataType.Int,
    torch.int32: DataType.Int32,
}


def _scaled_cumsum(fd, x, dim):
    return fd.ops.cumsum(fd.ops.mul(x, 2.0), dim) + 1.0


def _scaled_cumsum_torch(x, dim):
    return torch.cumsum(x.float() * 2.0, dim) + 1.0


def _cumsum_of_cumsum(fd, x, dim):
    return fd.ops.cumsum(fd.ops.cumsum(x, dim), dim) - x


def _cumsum_of_cumsum_torch(x, dim):
    return torch.cumsum(torch.cumsum(x, dim), dim) - x


def _positions(fd, mask, dim):
    # position ids from an attention mask: cumsum(mask) - 1, 1 where masked
    return fd.ops.where(fd.ops.eq(mask, 0), 1, fd.ops.cumsum(mask, dim) - 1)


def _positions_torch(mask, dim):
    return torch.where(mask == 0, 1, torch.cumsum(mask, dim) - 1)


# name -> (shape, dtype, dim, body, torch function)
CASES = {
    "inner_fp32": ((6, 1000), torch.float32, 1, _scaled_cumsum, _scaled_cumsum_torch),
    "inner_odd_width": ((5, 7), torch.float32, 1, _scaled_cumsum, _scaled_cumsum_torch),
    "inner_long_row": ((2, 20000), torch.float32, 1, _scaled_cumsum, _scaled_cumsum_torch),
    "outer_dim0": ((300, 24), torch.float32, 0, _scaled_cumsum, _scaled_cumsum_torch),
    "middle_dim": ((3, 50, 16), torch.float32, 1, _scaled_cumsum, _scaled_cumsum_torch),
    "rank1": ((777,), torch.float32, 0, _scaled_cumsum, _scaled_cumsum_torch),
    "chained": ((4, 256), torch.float32, 1, _cumsum_of_cumsum, _cumsum_of_cumsum_torch),
    "positions_int64": ((4, 96), torch.int64, 1, _positions, _positions_torch),
}


def _define(name):
    shape, dtype, dim, body, _ = CASES[name]
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1] * len(shape), contiguity=True, dtype=NV[dtype])
        fd.add_output(body(fd, x, dim))
    return fd


def _input(name, device):
    shape, dtype, _, _, _ = CASES[name]
    if dtype == torch.int64:
        return torch.randint(0, 2, shape, device=device)
    return make_input(shape, dtype, low=-1.0, high=1.0, device=device)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_one_scan_kernel_that_nvrtc_compiles(name):
    fd = _define(name)
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    code = fd.cuda_code_for([_input(name, "cpu")])
    assert f"scan_axis={CASES[name][2]}" in code
    compiled = _C.nvrtc_compile(code, "nvfuse_scan", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]


def test_an_innermost_scan_is_a_warp_per_row_and_another_a_thread_walk():
    inner = _define("inner_fp32").cuda_code_for([_input("inner_fp32", "cpu")])
    assert "nvfuse::warp_exclusive_sum(" in inner and "k += 32 * kVec" in inner
    outer = _define("outer_dim0").cuda_code_for([_input("outer_dim0", "cpu")])
    assert "warp_exclusive_sum(" not in outer.split("(const Args args)")[1]
    assert "for (Index i = 0; i < args.extent[0]; ++i)" in outer


def test_bf16_sums_accumulate_in_fp32():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        fd.add_output(fd.ops.cumsum(x, 1))
    code = fd.cuda_code_for([torch.randn(4, 64, dtype=torch.bfloat16)])
    assert "nvfuse::Array<float, kVec> v" in code and "kVec = 8" in code


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name, device):
    _, _, dim, _, torch_fn = CASES[name]
    x = _input(name, device)
    fd = _define(name)
    (out,) = fd.execute([x])
    expected = torch_fn(x, dim)
    if x.dtype == torch.int64:
        assert torch.equal(out, expected)
    else:
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-3)
    if device == "cuda":
        assert "nvfuse_scan" in fd.last_cuda_code()


@pytest.mark.parametrize("device", DEVICES)
def test_cumsums_along_two_axes_are_two_scan_kernels(device):
    # One kernel walks one axis: the merge segmenter cuts between them.
    x = make_input((8, 16), torch.float32, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.cumsum(fd.ops.cumsum(t, 0) * 0.5, 1))
    assert [ops for _, ops in fd.segment_summary()] == [["cumsum", "mul"], ["cumsum"]]
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.cumsum(torch.cumsum(x, 0) * 0.5, 1))


@pytest.mark.parametrize("device", DEVICES)
def test_a_cumsum_next_to_a_reduction_is_its_own_segment(device):
    x = make_input((8, 16), torch.float32, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(fd.ops.cumsum(t, 1), [1]))
    assert [kind for kind, _ in fd.segment_summary()] == ["aten", "fused"]
    (out,) = fd.execute([x])
    assert_close(out, torch.cumsum(x, 1).sum(1))


# --- what the scan kernel does not walk --------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_a_cumsum_read_at_other_coordinates_downstream_is_not_walked(device):
    # The slice reads the doubled sums at shifted columns: the sums must be
    # a tensor first (two segments), not a value of the walk.
    x = make_input((4, 8), torch.float32, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        c = fd.ops.mul(fd.ops.cumsum(t, 1), 2.0)
        fd.add_output(fd.ops.slice(c, [0, 2], [4, 8], [1, 1]))
    assert len(fd.segment_summary()) == 2
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, (torch.cumsum(x, 1) * 2.0)[:, 2:8])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1])
def test_a_cumsum_along_a_broadcast_axis_is_not_walked(dim, device):
    shape = [5, 1] if dim == 1 else [1, 8]
    x = make_input(tuple(shape), torch.float32, device=device)
    y = make_input((5, 8), torch.float32, device=device)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            [-1 if s > 1 else 1 for s in shape], contiguity=[True if s > 1 else None for s in shape]
        )
        u = fd.from_pytorch(y)
        fd.add_output(fd.ops.add(fd.ops.cumsum(t, dim), u))
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, torch.cumsum(x, dim) + y)


@pytest.mark.parametrize("device", DEVICES)
def test_a_cumsum_of_an_expanded_axis_grows_along_it(device):
    # The sums of a value repeated along an axis are not repeated: the
    # result is an ordinary tensor there (not a stride-0 output).
    x = make_input((5, 7), torch.float32, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        rows = fd.ops.expand(fd.ops.sum(t, [1], keepdim=True), [5, 7])
        fd.add_output(fd.ops.cumsum(rows + 1.0, 1))
    (out,) = fd.execute([x])
    expected = torch.cumsum(x.sum(1, keepdim=True).expand(5, 7) + 1.0, 1)
    torch.testing.assert_close(out, expected)
    assert out.stride(1) != 0


def test_a_cumsum_of_a_0d_tensor_is_not_walked():
    with FusionDefinition() as fd:
        t = fd.define_tensor([], dtype=DataType.Float)
        fd.add_output(fd.ops.cumsum(t, 0))
    with pytest.raises(Exception, match="reference evaluator"):
        fd.cuda_code_for([torch.tensor(2.0)])
    (out,) = fd.execute([torch.tensor(2.0)])
    torch.testing.assert_close(out, torch.cumsum(torch.tensor(2.0), 0))
