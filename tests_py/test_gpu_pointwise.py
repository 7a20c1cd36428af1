"""Generated pointwise kernels on the GPU against torch: every op and dtype,
broadcast and permuted layouts, misaligned views, the 2^31-element index
boundary, streams, and the kernel caches. Outputs are poisoned before each
launch (conftest), so an element a kernel skips fails the comparison."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition
from fusion_helpers import ALL_DTYPES, make_input, run_fusion
from test_binary_ops import BINARY, NONZERO_DIVISOR, SMALL_NON_NEGATIVE
from test_unary_ops import FLOAT_PROMOTING_EXTENSIONS, UNARY

pytestmark = pytest.mark.gpu


def assert_close_gpu(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if expected.dtype in (torch.bfloat16, torch.float16):
        torch.testing.assert_close(
            actual.float(), expected.float(), rtol=1.6e-2, atol=1e-2, equal_nan=True
        )
    elif expected.dtype == torch.float32:
        # CUDA's libdevice and torch's kernels may differ by a few ulp in
        # transcendental functions.
        torch.testing.assert_close(actual, expected, rtol=2e-5, atol=1e-5, equal_nan=True)
    else:
        torch.testing.assert_close(actual, expected, equal_nan=True)


def run_kernel(build, inputs):
    """Runs the fusion and checks that a generated kernel (not the reference
    evaluator) computed it. Dtypes nvfuse rejects are tested against torch's
    CPU rules elsewhere (torch's CUDA and CPU kernels disagree on a few)."""
    try:
        outs, fd = run_fusion(build, inputs)
    except nvfuse.DefinitionTypeError as e:
        pytest.skip(f"rejected by nvfuse's type rules: {e}")
    assert "nvfuse_pointwise" in fd.last_cuda_code(), "no kernel was generated"
    return outs, fd


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(set(UNARY) - {"imag"}))
def test_unary_kernel_matches_torch(op, dtype):
    fn, domain = UNARY[op]
    low, high = domain if (domain and dtype.is_floating_point) else (None, None)
    x = make_input((129, 67), dtype, low, high, device="cuda")
    try:
        expected = fn(x)
    except (RuntimeError, TypeError):
        if op not in FLOAT_PROMOTING_EXTENSIONS:
            pytest.skip("torch rejects this dtype; so does nvfuse (CPU tests)")
        expected = fn(x.float())
    (out,), _ = run_kernel(lambda fd, t: getattr(fd.ops, op)(t), [x])
    assert_close_gpu(out, expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_kernel_matches_torch(op, dtype):
    a = make_input((257, 33), dtype, device="cuda")
    if op in SMALL_NON_NEGATIVE and dtype != torch.bool:
        b = make_input((257, 33), dtype, 0, 3, device="cuda")
    elif op in NONZERO_DIVISOR and dtype != torch.bool:
        b = make_input((257, 33), dtype, 1, 4, device="cuda")
    else:
        b = make_input((257, 33), dtype, device="cuda")
    try:
        expected = BINARY[op](a, b)
    except (RuntimeError, TypeError):
        pytest.skip("torch rejects this dtype; so does nvfuse (CPU tests)")
    (out,), _ = run_kernel(lambda fd, x, y: getattr(fd.ops, op)(x, y), [a, b])
    assert_close_gpu(out, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_ternary_kernels_match_torch(dtype):
    a, b, w = (make_input((100, 50), dtype, device="cuda") for _ in range(3))
    cond = a > 0
    outs, _ = run_kernel(
        lambda fd, c, x, y, z: (
            fd.ops.where(c, x, y),
            fd.ops.lerp(x, y, z),
            fd.ops.clamp(x, -0.5, 0.5),
            fd.ops.threshold(x, 0.1, 2.0),
            fd.ops.addcmul(x, y, z, 0.5),
            fd.ops.add_alpha(x, y, 3.0),
        ),
        [cond, a, b, w],
    )
    expected = (
        torch.where(cond, a, b),
        torch.lerp(a, b, w),
        torch.clamp(a, -0.5, 0.5),
        torch.nn.functional.threshold(a, 0.1, 2.0),
        torch.addcmul(a, b, w, value=0.5),
        torch.add(a, b, alpha=3.0),
    )
    for out, ref in zip(outs, expected):
        assert_close_gpu(out, ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lerp_picks_torchs_form_by_the_weights_magnitude(dtype):
    # torch uses start + w * (end - start) only for |w| < 0.5: a weight of
    # -inf takes the other form, NaN where the first gives an infinity.
    special = [float("-inf"), -2.0, -0.5, -0.49, 0.0, 0.49, 0.5, 2.0, float("inf"), float("nan")]
    values = torch.tensor(special, dtype=dtype, device="cuda")
    start, end, weight = torch.meshgrid(values, values, values, indexing="ij")
    start, end, weight = start.contiguous(), end.contiguous(), weight.contiguous()
    (out,), _ = run_kernel(lambda fd, x, y, z: fd.ops.lerp(x, y, z), [start, end, weight])
    torch.testing.assert_close(out, torch.lerp(start, end, weight), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_row_and_column_broadcasts(dtype):
    x = make_input((300, 520), dtype, device="cuda")
    row = make_input((520,), dtype, device="cuda")
    col = make_input((300, 1), dtype, device="cuda")
    (out,), fd = run_kernel(lambda fd, t, r, c: fd.ops.mul(fd.ops.add(t, r), c), [x, row, col])
    assert_close_gpu(out, (x + row) * col)
    assert "constexpr int kVec = 1;" not in fd.last_cuda_code()


@pytest.mark.parametrize("shape", [(7, 13, 1000003), (3, 5, 7, 11, 13, 17 * 8)])
def test_magic_number_coordinates_reach_every_element(shape):
    """Rows and columns from args.divider at extents no power of two
    divides (a prime near 2^20 among them): every element gets its own
    broadcast operands."""
    x = make_input(shape, torch.float32, device="cuda")
    inner = make_input(shape[-1:], torch.float32, device="cuda")
    outer = make_input((shape[0],) + (1,) * (len(shape) - 1), torch.float32, device="cuda")
    (out,), fd = run_kernel(lambda fd, t, i, o: fd.ops.mul(fd.ops.add(t, i), o), [x, inner, outer])
    assert "nvfuse::fast_div(rest, args.divider[" in fd.last_cuda_code()
    assert torch.equal(out, (x + inner) * outer)


def test_sigmoid_is_within_two_ulp_and_exact_at_its_limits():
    """nvfuse::sigmoid divides with __fdividef (2 ulp) after a correctly
    rounded expf; infinities, NaN and zero give torch's values exactly,
    and below x = -87 it is 0 where torch's is below 2^-126."""
    x = torch.randn(1 << 20, device="cuda") * 8
    special = [float("-inf"), float("inf"), float("nan"), 0.0, -0.0, -100.0, 100.0, 88.0, -88.0]
    x[: len(special)] = torch.tensor(special)
    (out,), _ = run_kernel(lambda fd, t: fd.ops.sigmoid(t), [x])
    want = torch.sigmoid(x)
    torch.testing.assert_close(out, want, rtol=3 * 2.0**-23, atol=2.0**-126, equal_nan=True)
    assert torch.equal(out[:5].nan_to_num(7.0), want[:5].nan_to_num(7.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("divisor", [3.0, 0.1, 7.3e-39, float("inf")])
def test_division_by_a_number_has_torchs_bits(dtype, divisor):
    """torch's CUDA kernel multiplies by the divisor's reciprocal when it
    is a CPU scalar; nvfuse does the same, bit for bit."""
    x = make_input((300, 520), dtype, device="cuda")
    x.view(-1)[:4] = torch.tensor([float("nan"), float("inf"), -0.0, 0.0], dtype=dtype)
    (out,), _ = run_kernel(lambda fd, t: fd.ops.div(t, divisor), [x])
    want = x / divisor
    assert torch.equal(out.isnan(), want.isnan())
    assert torch.equal(out.nan_to_num(7.0), want.nan_to_num(7.0))


def test_expanded_input_combined_with_a_full_tensor():
    x = make_input((1, 640), torch.float32, device="cuda").expand(200, 640)
    y = make_input((200, 640), torch.float32, device="cuda")
    (out,), _ = run_kernel(lambda fd, t, u: fd.ops.mul(fd.ops.exp(t), u), [x, y])
    assert_close_gpu(out, x.exp() * y)


def test_expanded_output_runs_on_the_reference_evaluator():
    # exp of a stride-0 tensor is stride-0 too: no kernel writes it (yet).
    x = make_input((1, 640), torch.float32, device="cuda").expand(200, 640)
    (out,), fd = run_fusion(lambda fd, t: fd.ops.exp(t), [x])
    assert out.stride() == (0, 1) and fd.last_cuda_code() == ""
    assert_close_gpu(out, x.exp())


def _stride_order_of(t):
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    ranks = [0] * t.dim()
    for rank, axis in enumerate(reversed(order)):
        ranks[axis] = rank
    return ranks


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_permuted_inputs_and_output_stride_order(dtype):
    x = make_input((8, 16, 32, 24), dtype, device="cuda").permute(0, 2, 3, 1)  # NHWC-like
    y = make_input((8, 16, 32, 24), dtype, device="cuda").permute(0, 2, 3, 1)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.relu(a * b), stride_order=_stride_order_of(x))
    (out,) = fd.execute([x, y])
    assert out.stride() == x.stride()
    assert_close_gpu(out, torch.relu(x * y))
    assert "constexpr int kVec = 1;" not in fd.last_cuda_code()  # coalesced


def test_transposed_input_with_row_major_output():
    x = make_input((513, 257), torch.float32, device="cuda").t()
    (out,), _ = run_kernel(lambda fd, t: fd.ops.sigmoid(t), [x])
    assert_close_gpu(out, torch.sigmoid(x))


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_misaligned_views_step_the_vector_width_down(offset):
    base = make_input((4096 + 8,), torch.float32, device="cuda")
    x = base[offset : offset + 4096]
    (out,), fd = run_kernel(lambda fd, t: fd.ops.mul(t, 3.0), [x])
    assert_close_gpu(out, x * 3.0)
    assert "constexpr int kVec = 4;" not in fd.last_cuda_code()


def test_the_last_schedule_is_reused_only_for_the_same_sizes_strides_and_alignment():
    # One definition called with aligned, misaligned, resized and strided
    # inputs in turn: each call's schedule must be its own (the executor
    # keeps the last one for calls that look the same).
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], contiguity=[False])
        fd.add_output(fd.ops.mul(t, 3.0))
    base = make_input((8192 + 8,), torch.float32, device="cuda")
    calls = [base[:4096], base[1:4097], base[:4096], base[:8192], base[:8192:2], base[:4096]]
    widths = []
    for x in calls:
        (out,) = fd.execute([x])
        assert_close_gpu(out, x * 3.0)
        widths.append(fd.last_cuda_code().split("constexpr int kVec = ")[1].split(";")[0])
    assert widths[0] == widths[2] == widths[5] == "4"
    assert widths[1] != "4" and widths[4] == "1"


@pytest.mark.parametrize("numel", [1, 3, 1023, 4097, 65537])
def test_sizes_with_tails(numel):
    x = make_input((numel,), torch.bfloat16, device="cuda")
    (out,), _ = run_kernel(lambda fd, t: fd.ops.tanh(t), [x])
    assert_close_gpu(out, torch.tanh(x))


def test_scalars_and_cpu_scalar_tensors_are_kernel_arguments():
    x = make_input((1000,), torch.float16, device="cuda")
    c = torch.tensor(0.25)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.define_scalar(dtype=DataType.Double)
        cpu = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(fd.ops.add(fd.ops.mul(t, fd.ops.mul(s, 2.0)), cpu))
    (out,) = fd.execute([x, 1.5, c])
    assert_close_gpu(out, (x.float() * 3.0 + 0.25).half())


def test_multiple_outputs_and_an_input_returned_as_is():
    x = make_input((77, 91), torch.float32, device="cuda")
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sin(t))
        fd.add_output(t)
        fd.add_output(fd.ops.cast(fd.ops.cos(t), DataType.BFloat16))
    a, same, b = fd.execute([x])
    assert same.data_ptr() == x.data_ptr()
    assert_close_gpu(a, x.sin())
    assert_close_gpu(b, x.cos().bfloat16())


def test_in_place_output_updates_the_input():
    x = make_input((1000,), torch.float32, device="cuda")
    expected = x * 2 + 1
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(t * 2.0 + 1.0, alias_input=t)
    assert fd.execute([x]) == []
    assert_close_gpu(x, expected)


def test_launch_is_on_the_current_stream():
    x = make_input((1 << 20,), torch.float32, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x2 = x * 1.0  # ordered on `side`
        (out,), _ = run_kernel(lambda fd, t: fd.ops.exp(t), [x2])
    side.synchronize()
    assert_close_gpu(out, x.exp())


def test_empty_tensor_launches_nothing():
    # No kernel for a tensor without elements (the reference evaluator makes
    # the empty output): run_kernel's check would pass only when an earlier
    # test in the process had compiled this definition's kernel.
    x = torch.empty(0, 5, device="cuda")
    (out,), _ = run_fusion(lambda fd, t: fd.ops.neg(t), [x])
    assert out.shape == (0, 5) and out.device == x.device


def test_more_than_two_to_the_31_elements_uses_64_bit_indexing():
    n = (1 << 31) + 1000
    x = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    x[:4096].normal_()
    x[-4096:].normal_()
    x[4096:-4096].fill_(1.5)
    (out,), fd = run_kernel(lambda fd, t: fd.ops.neg(t), [x])
    assert "typedef nvfuse::int64 Index;" in fd.last_cuda_code()
    torch.testing.assert_close(out[:4096], -x[:4096])
    torch.testing.assert_close(out[-4096:], -x[-4096:])
    assert bool((out[4096:-4096] == -1.5).all())
    del out, x
    torch.cuda.empty_cache()


def test_new_process_loads_kernels_from_the_disk_cache_and_reuses_them_across_sizes(tmp_path):
    script = textwrap.dedent("""
        import torch
        from nvfuse import FusionDefinition, DataType
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
            fd.add_output(fd.ops.mul(fd.ops.exp(t), 0.5))
        # Large enough that all three share one schedule (and so one kernel).
        for n in (1 << 23, 3 << 22, 1 << 24):
            x = torch.randn(n, device="cuda")
            torch.testing.assert_close(fd.execute([x])[0], x.exp() * 0.5)
    """)
    env = dict(os.environ, NVFUSE_CACHE_DIR=str(tmp_path), NVFUSE_DUMP="compile_time")

    def run():
        result = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr
        return result.stderr

    first, second = run(), run()
    assert first.count("compiled by NVRTC") == 1, first  # one kernel, three sizes
    assert second.count("loaded from the disk cache") == 1, second
    assert "compiled by NVRTC" not in second


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_kernel_runs_on_the_inputs_gpu():
    x = make_input((1000,), torch.float32, device="cuda:1")
    (out,), _ = run_kernel(lambda fd, t: fd.ops.sqrt(fd.ops.abs(t)), [x])
    assert out.device == x.device
    assert_close_gpu(out, x.abs().sqrt())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("exponent", [2.0, 3.0, -2.0, -1.0, 0.5, -0.5, 2.5])
def test_pow_by_a_number_matches_torchs_bits(exponent, dtype):
    # torch multiplies for 2, 3, -2 and -1 (rounding each product to a half
    # type) and takes sqrt, rsqrt for +-0.5.
    x = (torch.rand(4096, device="cuda") * 100 + 0.01).to(dtype)
    (out,), _ = run_kernel(lambda fd, t: fd.ops.pow(t, exponent), [x])
    if exponent in (0.5, -0.5, 2.5):
        torch.testing.assert_close(out, torch.pow(x, exponent))
    else:
        assert torch.equal(out, torch.pow(x, exponent))
