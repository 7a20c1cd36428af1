"""uniform, normal, rand_like, randn_like and dropout: reproducible under
torch.manual_seed, different between runs, a pure function of an explicit
(seed, offset), and with the right distribution."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError
from fusion_helpers import DEVICES, assert_close


def _rand_like_fusion(dtype=DataType.Float, normal=False):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True, dtype=dtype)
        r = fd.ops.randn_like(t) if normal else fd.ops.rand_like(t)
        fd.add_output(r)
    return fd


def _seed_all(seed):
    torch.manual_seed(seed)  # seeds the CPU and every CUDA generator


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("normal", [False, True])
def test_manual_seed_makes_runs_reproducible_and_runs_differ(normal, device):
    fd = _rand_like_fusion(normal=normal)
    x = torch.empty(64, 33, device=device)
    _seed_all(7)
    (first,) = fd.execute([x])
    (second,) = fd.execute([x])
    _seed_all(7)
    (again,) = fd.execute([x])
    assert torch.equal(first, again)
    assert not torch.equal(first, second)
    assert first.device == x.device and first.shape == x.shape


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double, DataType.BFloat16])
def test_uniform_is_within_bounds_with_the_right_moments(dtype, device):
    anchor = torch.zeros(1, device=device)
    with FusionDefinition() as fd:
        fd.from_pytorch(anchor)
        fd.add_output(fd.ops.uniform(-2.0, 3.0, [256, 512], dtype=dtype))
    (out,) = fd.execute([anchor])
    values = out.double()
    assert values.min() >= -2.0 and values.max() <= 3.0
    assert abs(values.mean().item() - 0.5) < 0.02
    assert abs(values.var().item() - 25 / 12) < 0.03


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double])
def test_normal_has_the_right_moments(dtype, device):
    anchor = torch.zeros(1, device=device)
    with FusionDefinition() as fd:
        fd.from_pytorch(anchor)
        fd.add_output(fd.ops.normal(1.0, 2.0, [512, 512], dtype=dtype))
    (out,) = fd.execute([anchor])
    values = out.double()
    assert values.isfinite().all()
    assert abs(values.mean().item() - 1.0) < 0.02
    assert abs(values.std().item() - 2.0) < 0.02
    # Tails as a Gaussian's: ~4.55% beyond two standard deviations.
    beyond = ((values - 1.0).abs() > 4.0).double().mean().item()
    assert abs(beyond - 0.0455) < 0.004


def test_explicit_seed_and_offset_fix_the_values():
    with FusionDefinition() as fd:
        seed = fd.define_scalar(dtype=DataType.Int)
        offset = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.uniform(0.0, 1.0, [4, 5], rng_seed=seed, rng_offset=offset))
    (a,) = fd.execute([1234, 8])
    (b,) = fd.execute([1234, 8])
    (c,) = fd.execute([1234, 12])
    (d,) = fd.execute([99, 8])
    assert torch.equal(a, b)
    assert not torch.equal(a, c) and not torch.equal(a, d)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double, DataType.BFloat16])
@pytest.mark.parametrize("normal", [False, True])
def test_explicit_seed_gives_the_same_values_on_cpu_and_gpu(normal, dtype):
    """The GPU computes them in the kernel, the CPU on the host, from the
    same Philox words: uniform values are equal bit for bit; normal ones
    differ at most by the device's log/cos/sqrt rounding."""
    results = []
    for device in ["cpu", "cuda"]:
        anchor = torch.zeros(1, device=device)
        with FusionDefinition() as fd:
            fd.from_pytorch(anchor)
            make = fd.ops.normal if normal else fd.ops.uniform
            fd.add_output(make(0.5, 2.0, [301, 7], rng_seed=5, rng_offset=4, dtype=dtype))
        (out,) = fd.execute([anchor])
        results.append(out.cpu())
        if device == "cuda":
            assert "nvfuse_philox" in fd.last_cuda_code()
    if normal:
        torch.testing.assert_close(results[1], results[0], rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(results[0], results[1])


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_as_a_fusion_keeps_the_expected_fraction(device):
    p = 0.25
    x = torch.randn(128, 256, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        keep = fd.ops.lt(fd.ops.rand_like(t), 1.0 - p)
        out = fd.ops.where(keep, t * (1.0 / (1.0 - p)), 0.0)
        fd.add_output(out)
        fd.add_output(keep)
    _seed_all(0)
    out, keep = fd.execute([x])
    assert abs(keep.double().mean().item() - (1 - p)) < 0.01
    assert_close(out, torch.where(keep, x / (1 - p), torch.zeros_like(x)))


def test_rng_seed_without_offset_is_a_definition_error():
    with pytest.raises(DefinitionError, match="both rng_seed and rng_offset"):
        with FusionDefinition() as fd:
            fd.ops.uniform(0.0, 1.0, [2], rng_seed=3)


def test_random_integers_are_a_type_error():
    with pytest.raises(DefinitionTypeError, match="dtype must be Double, Float"):
        with FusionDefinition() as fd:
            fd.ops.uniform(0.0, 1.0, [2], dtype=DataType.Int)


@pytest.mark.parametrize(
    "counter, key, expected",
    [
        ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
        ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
        (
            [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
            [0xA4093822, 0x299F31D0],
            [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
        ),
    ],
)
def test_philox_matches_the_random123_known_answers(counter, key, expected):
    """Random123's tests/kat_vectors for philox4x32 with 10 rounds."""
    from nvfuse import _C

    assert _C.philox4x32_10(counter, key) == expected


def _uniform_in(low, high, seed=None, offset=None, normal=False):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        draw = fd.ops.normal if normal else fd.ops.uniform
        r = draw(low, high, [64, 33], rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
        fd.add_output(fd.ops.add(t, r))
    return fd


@pytest.mark.parametrize("normal", [False, True])
def test_definitions_differing_only_in_random_parameters_share_one_kernel(normal):
    """The bounds (mean and std) and an explicit seed and offset are kernel
    arguments: a loop over them compiles one kernel (CPU tensors stand in
    for CUDA ones' layouts)."""
    x = torch.zeros(64, 33)
    codes = {
        _without_comments(_uniform_in(low, high, seed, offset, normal).cuda_code_for([x]))
        for low, high, seed, offset in [(0.5, 2.0, 1, 0), (-3.0, 7.5, 2, 4), (0.25, 0.5, 99, 8)]
    }
    assert len(codes) == 1


def _without_comments(code):
    """The code as the kernel cache keys it: comments (which name each
    statement's expr, constants included) do not count."""
    import re

    return re.sub(r"//[^\n]*", "", code)


def test_unit_uniform_keeps_its_bounds_in_the_code():
    x = torch.zeros(64, 33)
    unit = _uniform_in(0.0, 1.0).cuda_code_for([x])
    other = _uniform_in(0.5, 2.0).cuda_code_for([x])
    assert _without_comments(unit) != _without_comments(other) and "__fadd_rn" not in unit


@pytest.mark.parametrize("device", DEVICES)
def test_random_parameters_passed_as_arguments_keep_their_values(device):
    x = torch.zeros(64, 33, device=device)
    (low_high,) = _uniform_in(-3.0, -2.0, 5, 0).execute([x])
    assert low_high.min() >= -3.0 and low_high.max() < -2.0
    (again,) = _uniform_in(-3.0, -2.0, 5, 0).execute([x])
    (shifted,) = _uniform_in(7.0, 8.0, 5, 0).execute([x])
    assert torch.equal(low_high, again)
    torch.testing.assert_close(shifted - 10.0, low_high, rtol=0, atol=1e-5)
    (other_seed,) = _uniform_in(-3.0, -2.0, 6, 0).execute([x])
    assert not torch.equal(low_high, other_seed)


@pytest.mark.gpu
def test_a_loop_over_random_bounds_compiles_one_kernel():
    import nvfuse

    x = torch.zeros(64, 33, device="cuda")
    nvfuse.set_dump("compile_time")
    try:
        compiles = 0
        for k in range(6):
            fd = _uniform_in(0.1 * k + 0.1, 1.0 + k)  # (0, 1) has its own kernel
            fd.execute([x], capture_debug_output=True)
            compiles += (fd.debug_output() or "").count("compiled by NVRTC")
    finally:
        nvfuse.set_dump("")
    assert compiles <= 1  # 0 when an earlier test or the disk cache compiled it
