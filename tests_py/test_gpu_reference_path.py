"""CUDA tensors through the runtime, whichever executor runs them: device
placement, CPU scalars mixed with CUDA tensors, layouts, and the fusions that
still fall back to the ATen reference evaluator (the seed's layer norm, whose
var_mean has no generated kernel yet)."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition
from fusion_helpers import assert_close, make_input, run_fusion
from test_seed_layer_norm import _layer_norm_reference, nvfuser_fusion_id0

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", ["sin", "exp", "rsqrt", "sigmoid", "silu", "erfinv"])
def test_unary_op_on_cuda_matches_torch(op, dtype):
    x = make_input((33, 65), dtype, 0.1, 0.9, device="cuda")
    (out,), _ = run_fusion(lambda fd, t: getattr(fd.ops, op)(t), [x])
    expected = getattr(torch.nn.functional, op, None) if op == "silu" else getattr(torch, op)
    assert out.device == x.device
    assert_close(out, expected(x))


def test_outputs_are_on_the_inputs_device_with_requested_strides():
    x = torch.randn(7, 9, device="cuda")
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.relu(t), stride_order=[0, 1])
    (out,) = fd.execute([x])
    assert out.device == x.device and out.stride() == (1, 7)
    assert_close(out, x.relu())


def test_cpu_scalar_tensor_with_cuda_tensors():
    x, s = torch.randn(4, 4, device="cuda"), torch.tensor(3.0)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        c = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(t * c)
    (out,) = fd.execute([x, s])
    assert_close(out, x * 3.0)


def test_cpu_tensor_mixed_with_cuda_tensor_is_an_input_error():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=True)
        b = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(a + b)
    with pytest.raises(nvfuse.InputError, match="input 1 is on cpu but input 0 is on cuda:0"):
        fd.execute([torch.ones(3, device="cuda"), torch.ones(3)])


def test_seed_layer_norm_on_cuda_matches_torch():
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    x = torch.randn(16, 128, 1600, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1600, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1600, device="cuda", dtype=torch.bfloat16)
    (out,) = fd.execute([x, w, b])
    torch.testing.assert_close(out, _layer_norm_reference(x, w, b), rtol=1.6e-2, atol=2e-2)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_inputs_on_the_second_gpu_run_there():
    x = torch.randn(5, device="cuda:1")
    (out,), _ = run_fusion(lambda fd, t: fd.ops.neg(t), [x])
    assert out.device == torch.device("cuda:1")
    assert_close(out, -x)


# Ops given Python numbers beside CUDA tensors, on the reference evaluator
# (a zero-element input runs there): the numbers must meet the tensors on
# their device, in every operand position the op takes one.
_SCALAR_OPERAND_CASES = {
    "clamp": (lambda fd, t: fd.ops.clamp(t, 0.25, 0.75), lambda x: x.clamp(0.25, 0.75)),
    "clamp_tensor_min": (lambda fd, t: fd.ops.clamp(t, t, 0.75), lambda x: x.clamp(max=0.75)),
    "where_numbers": (
        lambda fd, t: fd.ops.where(t > 0.5, 1.0, -1.0),
        lambda x: torch.where(x > 0.5, 1.0, -1.0),
    ),
    "where_number_condition": (lambda fd, t: fd.ops.where(True, t, 2.0), lambda x: x),
    "lerp_number_end": (
        lambda fd, t: fd.ops.lerp(t, 2.0, t),
        lambda x: torch.lerp(x, torch.full_like(x, 2.0), x),
    ),
    "lerp_number_weight": (
        lambda fd, t: fd.ops.lerp(t, t * 2.0, 0.5),
        lambda x: torch.lerp(x, x * 2, 0.5),
    ),
    "addcmul": (lambda fd, t: fd.ops.addcmul(t, t, 3.0, 0.5), lambda x: x + x * 3.0 * 0.5),
    "threshold": (
        lambda fd, t: fd.ops.threshold(t, 0.5, 7.0),
        lambda x: torch.threshold(x, 0.5, 7.0),
    ),
    "pow_number_base": (lambda fd, t: fd.ops.pow(2.0, t), lambda x: torch.pow(2.0, x)),
    "atan2_number": (
        lambda fd, t: fd.ops.atan2(1.0, t),
        lambda x: torch.atan2(torch.ones_like(x), x),
    ),
    "fmod_number": (lambda fd, t: fd.ops.fmod(t, 0.3), lambda x: torch.fmod(x, 0.3)),
    "maximum_number": (lambda fd, t: fd.ops.maximum(t, 0.5), lambda x: torch.clamp_min(x, 0.5)),
    "compare_number": (lambda fd, t: fd.ops.lt(0.5, t), lambda x: 0.5 < x),
}


@pytest.mark.parametrize("shape", [(0, 5), (3, 0)])
@pytest.mark.parametrize("case", sorted(_SCALAR_OPERAND_CASES))
def test_python_numbers_meet_cuda_tensors_on_the_reference_evaluator(case, shape):
    build, reference = _SCALAR_OPERAND_CASES[case]
    x = torch.rand(shape, device="cuda")
    (out,), _ = run_fusion(build, [x])
    want = reference(x)
    assert out.device == x.device and out.shape == want.shape and out.dtype == want.dtype
