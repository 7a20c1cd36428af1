"""The layer-norm definition of seed 002 (nvFuser's `nvfuser_fusion_id0`),
unchanged but for the import: it records, hashes and prints, and runs on
CPU tensors against torch's layer norm."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(
        shape=[-1, -1, -1],
        contiguity=[True, True, True],
        dtype=DataType.BFloat16,
        is_cpu=False,
        stride_order=[2, 1, 0],
    )  # noqa: E501
    T1 = fd.define_tensor(
        shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0]
    )  # noqa: E501
    T2 = fd.define_tensor(
        shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0]
    )  # noqa: E501
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[2], correction=0, keepdim=False)
    S6 = fd.define_scalar(16, dtype=DataType.Int)
    S7 = fd.define_scalar(128, dtype=DataType.Int)
    S8 = fd.define_scalar(1, dtype=DataType.Int)
    V9 = fd.define_vector([S6, S7, S8], dtype=DataType.Int)
    T10 = fd.ops.broadcast_in_dim(T4, shape=V9, broadcast_dims=[0, 1])
    S11 = fd.define_scalar(16, dtype=DataType.Int)
    S12 = fd.define_scalar(128, dtype=DataType.Int)
    S13 = fd.define_scalar(1, dtype=DataType.Int)
    V14 = fd.define_vector([S11, S12, S13], dtype=DataType.Int)
    T15 = fd.ops.broadcast_in_dim(T5, shape=V14, broadcast_dims=[0, 1])
    S16 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T17 = fd.ops.add(T10, S16)
    T18 = fd.ops.rsqrt(T17)
    S19 = fd.define_scalar(16, dtype=DataType.Int)
    S20 = fd.define_scalar(128, dtype=DataType.Int)
    S21 = fd.define_scalar(1600, dtype=DataType.Int)
    V22 = fd.define_vector([S19, S20, S21], dtype=DataType.Int)
    T23 = fd.ops.broadcast_in_dim(T15, shape=V22, broadcast_dims=[0, 1, 2])
    T24 = fd.ops.sub(T3, T23)
    S25 = fd.define_scalar(16, dtype=DataType.Int)
    S26 = fd.define_scalar(128, dtype=DataType.Int)
    S27 = fd.define_scalar(1600, dtype=DataType.Int)
    V28 = fd.define_vector([S25, S26, S27], dtype=DataType.Int)
    T29 = fd.ops.broadcast_in_dim(T18, shape=V28, broadcast_dims=[0, 1, 2])
    T30 = fd.ops.mul(T24, T29)
    S31 = fd.define_scalar(16, dtype=DataType.Int)
    S32 = fd.define_scalar(128, dtype=DataType.Int)
    S33 = fd.define_scalar(1600, dtype=DataType.Int)
    V34 = fd.define_vector([S31, S32, S33], dtype=DataType.Int)
    T35 = fd.ops.broadcast_in_dim(T1, shape=V34, broadcast_dims=[2])
    T36 = fd.ops.cast(T35, dtype=DataType.Float)
    T37 = fd.ops.mul(T30, T36)
    S38 = fd.define_scalar(16, dtype=DataType.Int)
    S39 = fd.define_scalar(128, dtype=DataType.Int)
    S40 = fd.define_scalar(1600, dtype=DataType.Int)
    V41 = fd.define_vector([S38, S39, S40], dtype=DataType.Int)
    T42 = fd.ops.broadcast_in_dim(T2, shape=V41, broadcast_dims=[2])
    T43 = fd.ops.cast(T42, dtype=DataType.Float)
    T44 = fd.ops.add(T37, T43)
    T45 = fd.ops.cast(T44, dtype=DataType.BFloat16)
    fd.add_output(T45)


def _seed_inputs():
    return [
        torch.randn(3276800, dtype=torch.bfloat16).as_strided((16, 128, 1600), (204800, 1600, 1)),
        torch.randn(1600, dtype=torch.bfloat16).as_strided((1600,), (1,)),
        torch.randn(1600, dtype=torch.bfloat16).as_strided((1600,), (1,)),
    ]


def _layer_norm_reference(x, weight, bias):
    return torch.nn.functional.layer_norm(
        x.float(), (x.shape[-1],), weight.float(), bias.float(), eps=1e-5
    ).to(torch.bfloat16)


def test_seed_layer_norm_records_hashes_and_prints():
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    with FusionDefinition() as again:
        nvfuser_fusion_id0(again)
    assert fd.id() == again.id()
    script = str(fd)
    assert "T4, T5 = fd.ops.var_mean(T3, dims=[2], correction=0, keepdim=False)" in script
    assert "V9 = fd.define_vector([S6, S7, S8], dtype=DataType.Int)" in script
    namespace = {}
    exec(compile(script, "<repro>", "exec"), namespace)
    assert namespace["fd"].id() == fd.id()


def test_seed_layer_norm_runs_on_cpu_and_matches_torch():
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    inputs = _seed_inputs()
    (out,) = fd.execute(inputs)
    expected = _layer_norm_reference(*inputs)
    torch.testing.assert_close(out, expected, rtol=1.6e-2, atol=2e-2)


def test_seed_layer_norm_with_statistics_as_inputs_matches_torch():
    """The issue's variant: var_mean replaced by inputs."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.BFloat16)
        var = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        mean = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        xf = fd.ops.cast(x, dtype=DataType.Float)
        rstd = fd.ops.rsqrt(fd.ops.add(fd.ops.broadcast_in_dim(var, [16, 128, 1], [0, 1]), 1e-5))
        centered = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, [16, 128, 1], [0, 1]))
        y = fd.ops.mul(centered, rstd)
        y = fd.ops.mul(
            y, fd.ops.cast(fd.ops.broadcast_in_dim(w, [16, 128, 1600], [2]), DataType.Float)
        )
        y = fd.ops.add(
            y, fd.ops.cast(fd.ops.broadcast_in_dim(b, [16, 128, 1600], [2]), DataType.Float)
        )
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    x, w, b = _seed_inputs()
    var, mean = torch.var_mean(x.float(), dim=2, correction=0)
    (out,) = fd.execute([x, w, b, var, mean])
    torch.testing.assert_close(out, _layer_norm_reference(x, w, b), rtol=1.6e-2, atol=2e-2)


def test_seed_layer_norm_error_names_the_input_on_a_wrong_dtype():
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    x, w, b = _seed_inputs()
    with pytest.raises(nvfuse.InputTypeError, match="input 0: expected a BFloat16 tensor"):
        fd.execute([x.float(), w, b])
