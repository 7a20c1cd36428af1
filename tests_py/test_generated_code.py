"""fd.cuda_code_for: the kernel nvfuse generates for given inputs, inspected
without a GPU (CPU tensors stand in for their shapes, strides and dtypes)."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition


def _bias_relu():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.BFloat16)
        s = fd.define_scalar(dtype=DataType.Double)
        y = fd.ops.relu(fd.ops.cast(x, DataType.Float) * s + fd.ops.cast(b, DataType.Float))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    return fd


def test_generated_code_has_one_statement_per_op_and_vector_loads():
    fd = _bias_relu()
    code = fd.cuda_code_for(
        [torch.randn(64, 256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16), 2.0]
    )
    assert "constexpr int kVec = 8;" in code  # 16-byte bf16 vectors
    assert "= relu(" in code and "nvfuse::relu(" in code
    assert "double d3;" in code  # the symbolic scalar is a kernel argument
    assert code.count("nvfuse::cast<nvfuse::BFloat16>(") == 1  # rounded once


def test_generated_code_steps_down_for_a_strided_input():
    x = torch.randn(64, 512, dtype=torch.bfloat16)[:, ::2]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.neg(t))
    code = fd.cuda_code_for([x])
    assert "constexpr int kVec = 1;" in code
    # Strides (512, 2) over a 64x256 output merge into one axis of stride 2.
    assert "offset_t0[u] = c0 * args.stride_t0[0];" in code


def test_fusions_the_schedulers_reject_say_why():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.ComplexFloat)
        fd.add_output(fd.ops.sum(t, [1]))
    with pytest.raises(nvfuse.UnsupportedError, match="reference evaluator.*ComplexFloat"):
        fd.cuda_code_for([torch.randn(3, 4, dtype=torch.complex64)])
    assert fd.last_cuda_code() == ""
