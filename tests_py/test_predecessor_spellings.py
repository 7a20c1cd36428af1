"""What code written for the predecessor (nvFuser) spells its own way,
taken as it did: errors that are RuntimeErrors, the printed definition's
names under as_nvfuser(), clone into a fresh definition, the singular
`dim` and a positional dtype in reductions, reductions of a 0-d tensor
over axis 0 or -1, vector inputs as lists, Float-typed sizes, the
FusionCache.get keywords, pytorch_utils' names, and outputs of an input updated in
place. No client needed."""

import sys

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionCache, FusionDefinition, clone
from nvfuse import errors
from fusion_helpers import DEVICES


@pytest.fixture
def as_nvfuser():
    """nvfuse registered as `nvfuser` for one test, unregistered after."""
    before = {k: sys.modules.get(k) for k in ("nvfuser", "nvfuser._C", "nvfuser.pytorch_utils")}
    nvfuse.as_nvfuser()
    yield
    for name, module in before.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def _negation():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(t))
    return fd


@pytest.mark.parametrize(
    "error",
    [
        errors.DefinitionError,
        errors.DefinitionTypeError,
        errors.InputError,
        errors.InputTypeError,
        errors.UnsupportedError,
        errors.InternalError,
    ],
)
def test_every_error_is_a_runtime_error(error):
    assert issubclass(error, RuntimeError) and issubclass(error, errors.NvfuseError)


def test_a_definition_error_is_caught_as_runtime_error():
    with pytest.raises(RuntimeError, match="out of range"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1, -1], dtype=DataType.Float)
            fd.add_output(fd.ops.sum(t, [5]))


def test_an_input_error_is_caught_as_runtime_error():
    with pytest.raises(RuntimeError):
        _negation().execute([torch.ones(2, 2)])


def test_the_printed_definition_is_named_as_nvfuser_names_it(as_nvfuser):
    fd = _negation()
    text = repr(fd)
    assert "def nvfuser_fusion_id" in text and "nvfuse_fusion_id" not in text
    assert "from nvfuser import" in fd.repro_script()
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    name = next(k for k in namespace if k.startswith("nvfuser_fusion_id"))
    with FusionDefinition() as again:
        namespace[name](again)
    assert torch.equal(again.execute([torch.ones(3)])[0], -torch.ones(3))


def test_the_printed_definition_keeps_nvfuse_names_without_the_alias():
    if sys.modules.get("nvfuser") is nvfuse:
        pytest.skip("an earlier test left the alias on")
    assert "def nvfuse_fusion_id" in repr(_negation())


def test_clone_into_a_fresh_definition():
    other = FusionDefinition()
    clone(_negation(), other)
    assert torch.equal(other.execute([torch.ones(2)])[0], -torch.ones(2))


def test_reductions_take_the_singular_dim_and_a_positional_dtype():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t, dim=0))
        fd.add_output(fd.ops.prod(t, DataType.Double))
        fd.add_output(fd.ops.max(t, dim=1, keepdim=True))
        fd.add_output(fd.ops.mean(t, dim=-1))
    x = torch.rand(3, 4) + 0.5
    total, product, largest, mean = fd.execute([x])
    torch.testing.assert_close(total, x.sum(0))
    assert product.dtype == torch.float64
    torch.testing.assert_close(product, x.double().prod())
    torch.testing.assert_close(largest, x.amax(1, keepdim=True))
    torch.testing.assert_close(mean, x.mean(-1))


def test_dims_and_dim_together_are_refused():
    with pytest.raises(errors.DefinitionTypeError, match="dims or dim"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1, -1], dtype=DataType.Float)
            fd.ops.sum(t, [0], dim=0)


@pytest.mark.parametrize("axis", [0, -1])
def test_reducing_a_0d_tensor_over_its_only_axis_is_the_tensor(axis):
    # Thunder's softmax of a 0-d tensor: max, sub, exp, sum over axis 0.
    with FusionDefinition() as fd:
        t = fd.define_tensor([], dtype=DataType.Float)
        largest = fd.ops.max(t, dims=[axis])
        shifted = fd.ops.exp(fd.ops.sub(t, largest))
        fd.add_output(fd.ops.div(shifted, fd.ops.sum(shifted, [axis])))
    (out,) = fd.execute([torch.tensor(3.0)])
    torch.testing.assert_close(out, torch.softmax(torch.tensor(3.0), 0))


def test_a_vector_input_takes_a_list_or_tuple():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t, fd.define_vector(2)))
    x = torch.arange(12.0)
    assert fd.execute([x, [4, 3]])[0].shape == (4, 3)
    assert fd.execute([x, (2, 6)])[0].shape == (2, 6)
    assert fd.execute([x, 3, 4])[0].shape == (3, 4)
    with pytest.raises(errors.InputTypeError, match="input 1: .* type list"):
        fd.execute([x, [4.0, 3]])


def test_sizes_spelled_as_float_scalars_are_int_sizes():
    # Thunder: S17 = 192 * reciprocal(S3) - flag, a Float, as a size.
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], dtype=DataType.Float)
        s0 = fd.define_scalar(dtype=DataType.Int)
        s3 = fd.define_scalar(dtype=DataType.Int)
        s17 = fd.ops.sub(fd.ops.mul(24, fd.ops.reciprocal(s3)), 0)
        fd.add_output(fd.ops.reshape(t, fd.define_vector([s0, s17], dtype=DataType.Int)))
    (out,) = fd.execute([torch.arange(12.0).view(3, 4), 2, 4])
    assert out.shape == (2, 6)


def test_fusion_cache_get_takes_the_predecessor_keywords():
    before = FusionCache.max()
    try:
        cache = FusionCache.get(
            max_fusions=512, selected_device=0, load_from_default_workspace=False
        )
        assert cache is FusionCache.get() and FusionCache.max() == 512
    finally:
        FusionCache.set_max(before)


def test_pytorch_utils_has_the_predecessor_names():
    from nvfuse import pytorch_utils

    assert pytorch_utils.torch_dtype_to_nvfuser_dtype(torch.bfloat16) == DataType.BFloat16
    assert pytorch_utils.torch_dtype_to_nvfuser_dtype(float) == DataType.Double
    assert pytorch_utils.python_scalar_to_nvfuser_dtype(3) == DataType.Int
    for name in ("get_device_properties", "clear_cuda_cache", "patch_codegen_so"):
        assert callable(getattr(pytorch_utils, name))
    if not torch.cuda.is_available():
        assert pytorch_utils.DEVICE_PROPERTIES is None
        with pytest.raises(errors.UnsupportedError):
            pytorch_utils.get_device_properties()


@pytest.mark.gpu
def test_device_properties_on_a_gpu():
    from nvfuse import pytorch_utils

    props = pytorch_utils.get_device_properties()
    assert props["gpu_sm_count"] > 0 and props["gpu_peak_bandwidth_gbps"] > 100


def test_retry_on_oom_retries_once_then_skips():
    from nvfuse.pytorch_utils import retry_on_oom_or_skip_test

    calls = []

    @retry_on_oom_or_skip_test
    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise torch.OutOfMemoryError("first try")
        return "ok"

    assert flaky() == "ok" and len(calls) == 2

    @retry_on_oom_or_skip_test
    def always():
        raise torch.OutOfMemoryError("no memory")

    with pytest.raises(pytest.skip.Exception, match="out of GPU memory"):
        always()


def _update_then_return(order, stride_order=None):
    """t4 = t0 + t1 written into t0, and also returned, plainly, before or
    after the in-place write; t0 returned too."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor([-1, -1], contiguity=True, stride_order=stride_order)
        t1 = fd.define_tensor([-1, -1], contiguity=True)
        t4 = fd.ops.add(t0, t1)
        for entry in order:
            if entry == "write":
                fd.add_output(t4, t0)
            else:
                fd.add_output(t4 if entry == "t4" else t0)
    return fd


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "order", [("write", "t4", "t0"), ("t4", "write", "t0"), ("write", "t0"), ("write", "t4")]
)
@pytest.mark.parametrize("stride_order", [None, [0, 1]])
def test_outputs_of_an_updated_input_share_its_storage(device, order, stride_order):
    x = torch.randn(3, 4, device=device)
    if stride_order:
        x = x.t().contiguous().t()  # column-major, as stride_order [0, 1] defines it
    y = torch.randn(3, 4, device=device)
    want = x + y
    outs = _update_then_return(order, stride_order).execute([x, y])
    assert len(outs) == len(order) - 1
    torch.testing.assert_close(x, want)
    for out in outs:
        assert out.data_ptr() == x.data_ptr()
        torch.testing.assert_close(out, want)
