"""Iota and random ops inside reduction kernels: the kernel computes them from
each element's position instead of reading a random tensor that a kernel of
its own wrote (dropout before a layer norm, the one-hot of cross-entropy's
backward). The values must be the ones the coordinate kernel and the CPU
reference draw for the same (seed, offset): bit-identical uniforms."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition, _C

P_DROP = 0.1


def _dropout_layer_norm(rng_seed=None, rng_offset=None):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        residual = fd.define_tensor([-1, -1], contiguity=True)
        keep = fd.ops.lt(fd.ops.rand_like(x, rng_seed, rng_offset), 1.0 - P_DROP)
        y = fd.ops.where(keep, x * (1.0 / (1.0 - P_DROP)), 0.0) + residual
        var, mean = fd.ops.var_mean(y, [1], correction=0)
        normed = (y - fd.ops.broadcast(mean, [False, True])) * fd.ops.broadcast(
            fd.ops.rsqrt(var + 1e-5), [False, True]
        )
        fd.add_output(normed)
        fd.add_output(keep)
    return fd


def _one_hot_softmax_grad(classes):
    """Cross-entropy backward: softmax minus the one-hot of the labels."""
    with FusionDefinition() as fd:
        logits = fd.define_tensor([-1, classes], contiguity=True)
        labels = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
        classes = fd.ops.iota(classes, dtype=DataType.Int)
        one_hot = fd.ops.eq(
            fd.ops.broadcast(classes, [True, False]), fd.ops.broadcast(labels, [False, True])
        )
        m = fd.ops.max(logits, [1], keepdim=True)
        e = fd.ops.exp(logits - m)
        probs = e / fd.ops.sum(e, [1], keepdim=True)
        fd.add_output(probs - fd.ops.cast(one_hot, DataType.Float))
    return fd


def test_dropout_before_a_layer_norm_is_one_kernel():
    fd = _dropout_layer_norm()
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    code = fd.cuda_code_for([torch.randn(4, 64), torch.randn(4, 64)])
    assert "nvfuse::int64 seed_0;" in code and "nvfuse::int64 offset_0;" in code
    # Lanes of a group share Philox blocks; the keep mask compares words.
    assert "nvfuse_philox::unit_words<kVec>(nvfuse::uint64(args.seed_0)" in code
    assert "nvfuse_philox::unit_below(unit_" in code
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


def test_the_one_hot_of_an_iota_is_computed_in_the_reduction_kernel():
    fd = _one_hot_softmax_grad(64)
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    code = fd.cuda_code_for([torch.randn(4, 64), torch.randint(0, 64, (4,))])
    assert "iota" in code
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


def test_a_drawn_random_op_feeding_reductions_over_different_axes_is_cut_out():
    """Such a fusion may run as one kernel per axis set; each would draw its
    own seed, so the random tensor is made once, by a kernel of its own."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        y = x * fd.ops.rand_like(x)
        fd.add_output(fd.ops.sum(y, [0]))
        fd.add_output(fd.ops.sum(y, [1]))
    kinds = [kind for kind, _ in fd.segment_summary()]
    assert len(kinds) == 2, kinds


def test_an_explicit_seed_stays_in_the_kernel_next_to_any_reductions():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        y = x * fd.ops.rand_like(x, rng_seed=3, rng_offset=4)
        fd.add_output(fd.ops.sum(y, [0]))
        fd.add_output(fd.ops.sum(y, [1]))
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]


def _seeded_reduction(shape, reduce_axis, normal, dtype, per_row):
    """sum(x * r) over `reduce_axis` with r from an explicit (seed, offset),
    r of x's shape or (per_row) one value per kept index; outputs r too."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1] * len(shape), contiguity=True)
        make = fd.ops.normal if normal else fd.ops.uniform
        if per_row:
            kept = [s for axis, s in enumerate(shape) if axis != reduce_axis]
            r = make(0.25, 2.0, kept, rng_seed=11, rng_offset=8, dtype=dtype)
            dims = [axis == reduce_axis for axis in range(len(shape))]
            spread = fd.ops.broadcast(r, dims)
        else:
            r = make(0.25, 2.0, list(shape), rng_seed=11, rng_offset=8, dtype=dtype)
            spread = r
        total = fd.ops.sum(x * fd.ops.cast(spread, DataType.Float), [reduce_axis])
        fd.add_output(total * (fd.ops.cast(r, DataType.Float) if per_row else 1.0))
        fd.add_output(r)
    return fd


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("reduce_axis", [0, 1])
def test_seeded_reduction_kernels_compile_under_nvrtc(reduce_axis, per_row):
    fd = _seeded_reduction((6, 40), reduce_axis, False, DataType.Float, per_row)
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    code = fd.cuda_code_for([torch.randn(6, 40)])
    assert "nvfuse_philox" in code
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double, DataType.BFloat16])
@pytest.mark.parametrize("normal", [False, True])
@pytest.mark.parametrize(
    "shape, reduce_axis",
    [((64, 1600), 1), ((33, 7), 1), ((5, 70001), 1), ((4096, 96), 0), ((3, 1029), 0)],
)
def test_random_values_in_a_reduction_kernel_match_the_cpu(
    shape, reduce_axis, normal, dtype, per_row
):
    """Inner (persistent, chunked, split) and outer kernels, random values
    per element and per row: the values equal the CPU reference's (uniforms
    bit for bit), and the sums use them."""
    fd = _seeded_reduction(shape, reduce_axis, normal, dtype, per_row)
    x = torch.randn(*shape, dtype=torch.float64)
    cpu_total, cpu_r = fd.execute([x.float()])
    gpu_total, gpu_r = fd.execute([x.float().cuda()])
    assert "nvfuse_reduction" in fd.last_cuda_code()
    if normal:
        # The device's logf/cosf/sqrtf round differently from the host's by
        # an ulp, which can move a bf16 value by one of its own ulps.
        tol = 8e-3 if dtype == DataType.BFloat16 else 1e-5
        torch.testing.assert_close(gpu_r.cpu(), cpu_r, rtol=tol, atol=tol)
    else:
        assert torch.equal(gpu_r.cpu(), cpu_r)
    loose = normal and dtype == DataType.BFloat16
    torch.testing.assert_close(gpu_total.cpu(), cpu_total, rtol=1e-3, atol=0.5 if loose else 1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("width", [7, 1600, 8192, 65536])
def test_dropout_layer_norm_on_the_gpu_normalizes_what_it_kept(width):
    x = torch.randn(256, width, device="cuda")
    residual = torch.randn_like(x)
    fd = _dropout_layer_norm()
    torch.manual_seed(0)
    normed, keep = fd.execute([x, residual])
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    y = torch.where(keep, x / (1.0 - P_DROP), 0.0) + residual
    torch.testing.assert_close(
        normed, torch.nn.functional.layer_norm(y, (width,), eps=1e-5), rtol=1e-4, atol=1e-4
    )
    if width >= 1600:
        assert abs(keep.double().mean().item() - (1 - P_DROP)) < 0.01
    torch.manual_seed(0)
    again, keep_again = fd.execute([x, residual])
    assert torch.equal(keep, keep_again) and torch.equal(normed, again)
    _, keep_next = fd.execute([x, residual])
    assert not torch.equal(keep, keep_next)


@pytest.mark.gpu
def test_dropout_layer_norm_mask_equals_the_coordinate_kernels_for_one_seed():
    """With an explicit (seed, offset), the reduction kernel keeps exactly the
    elements that the same rand_like keeps in a reduction-free fusion."""
    x = torch.randn(64, 1600, device="cuda")
    _, keep = _dropout_layer_norm(rng_seed=21, rng_offset=12).execute([x, torch.randn_like(x)])
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.lt(fd.ops.rand_like(t, 21, 12), 1.0 - P_DROP))
    (alone,) = fd.execute([x])
    assert torch.equal(keep, alone)


def _compared_mask(op, rand_first, bound, axis=1):
    """A reduction kernel's mask `rand op bound` (or `bound op rand`) with an
    explicit seed, and the sums over `axis` it keeps (1: an inner kernel,
    0: an outer one); `bound` None is a scalar input."""
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        p = fd.define_scalar(dtype=DataType.Double) if bound is None else bound
        r = fd.ops.rand_like(t, 5, 6)
        keep = getattr(fd.ops, op)(r, p) if rand_first else getattr(fd.ops, op)(p, r)
        fd.add_output(keep)
        fd.add_output(fd.ops.sum(fd.ops.where(keep, t, 0.0), [axis]))
    return fd


@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("rand_first", [True, False])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge"])
def test_masks_of_compared_uniforms_compare_words(op, rand_first, axis):
    fd = _compared_mask(op, rand_first, 0.75, axis)
    code = fd.cuda_code_for([torch.randn(8, 256)])
    assert ("ReductionParams(outer" in code) == (axis == 0)
    mirrored = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
    name = {
        "lt": "unit_below(",
        "le": "unit_at_most(",
        "gt": "unit_above(",
        "ge": "unit_at_least(",
    }[op if rand_first else mirrored[op]]
    assert "nvfuse_philox::" + name in code
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("bound", [0.75, 0.0, 1.0, 1.0 - 2.0**-24, -0.5, 2.0, None])
@pytest.mark.parametrize("rand_first", [True, False])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge"])
def test_word_compares_keep_what_the_cpu_float_compares_keep(op, rand_first, bound, axis):
    """Same (seed, offset): the GPU's word compares keep exactly the elements
    that the reference evaluator's float compares keep."""
    x = torch.randn(64, 1600)
    args = [x] if bound is not None else [x, 0.3]
    fd = _compared_mask(op, rand_first, bound, axis)
    keep_cpu, sums_cpu = fd.execute(args)
    keep_gpu, sums_gpu = fd.execute([a.cuda() if torch.is_tensor(a) else a for a in args])
    assert torch.equal(keep_gpu.cpu(), keep_cpu)
    torch.testing.assert_close(sums_gpu.cpu(), sums_cpu, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_one_hot_softmax_grad_matches_torch_on_the_gpu():
    logits = torch.randn(512, 1000, device="cuda")
    labels = torch.randint(0, 1000, (512,), device="cuda")
    (grad,) = _one_hot_softmax_grad(1000).execute([logits, labels])
    expected = torch.softmax(logits, 1) - torch.nn.functional.one_hot(labels, 1000).float()
    torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-6)


def test_a_persistent_row_draws_its_random_values_while_its_loads_are_in_flight():
    """Dropout after a softmax: the Philox rounds go right after phase 0's
    loads (they need no data), not into phase 2 after two reductions."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        shifted = x - fd.ops.broadcast(fd.ops.max(x, [1]), [False, True])
        e = fd.ops.exp(shifted)
        probs = e / fd.ops.broadcast(fd.ops.sum(e, [1]), [False, True])
        keep = fd.ops.lt(fd.ops.rand_like(probs), 1.0 - P_DROP)
        fd.add_output(fd.ops.where(keep, probs * (1.0 / (1.0 - P_DROP)), 0.0))
    code = fd.cuda_code_for([torch.randn(64, 1024)])
    phase0 = code[code.index("// phase 0") : code.index("// phase 1")]
    loads, rest = phase0.split("// The row's random values", 1)
    assert "= *reinterpret_cast" in loads and "unit_words<kVec>" in rest
    assert rest.index("unit_words<kVec>") < rest.index("MaxOp")
    assert "unit_words<" not in code[code.index("// phase 1") :]
    compiled = _C.nvrtc_compile(code, "nvfuse_reduction", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]
