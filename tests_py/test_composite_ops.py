"""The predecessor's ops that nvfuse composes from other fd.ops
(nvfuse/composite_ops.py) and the legacy forms of indexing ops, against
torch."""

import pytest
import torch
import torch.nn.functional as F

from nvfuse import DataType, FusionDefinition, NvfuseError


def _devices():
    return ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_training_updates_running_stats_as_torch(device, channels_last):
    torch.manual_seed(0)
    x = torch.randn(8, 5, 6, 7, device=device)
    x_in = x.permute(0, 2, 3, 1).contiguous() if channels_last else x
    w, b = torch.randn(5, device=device), torch.randn(5, device=device)
    running_mean, running_var = torch.randn(5, device=device), torch.rand(5, device=device) + 0.5
    torch_mean, torch_var = running_mean.clone(), running_var.clone()
    with FusionDefinition() as fd:
        xs, ws, bs, ms, vs = (fd.from_pytorch(t) for t in (x_in, w, b, running_mean, running_var))
        y, mean, invstd = fd.ops.batch_norm(
            xs, ws, bs, ms, vs, 0.1, 1e-5, True, channels_last=channels_last
        )
        for out in (y, mean, invstd):
            fd.add_output(out)
    y, mean, invstd = fd.execute([x_in, w, b, running_mean, running_var])
    expected = F.batch_norm(x, torch_mean, torch_var, w, b, training=True, momentum=0.1, eps=1e-5)
    if channels_last:
        expected = expected.permute(0, 2, 3, 1)
    torch.testing.assert_close(y, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(running_mean, torch_mean)
    torch.testing.assert_close(running_var, torch_var)
    dims = [0, 2, 3]
    torch.testing.assert_close(mean, x.mean(dims))
    torch.testing.assert_close(invstd, torch.rsqrt(x.var(dims, unbiased=False) + 1e-5))


def test_batch_norm_eval_uses_running_stats():
    torch.manual_seed(1)
    x = torch.randn(4, 3, 5).to(torch.bfloat16)
    running_mean, running_var = torch.randn(3), torch.rand(3) + 0.5
    with FusionDefinition() as fd:
        xs, ms, vs = (fd.from_pytorch(t) for t in (x, running_mean, running_var))
        y, _, _ = fd.ops.batch_norm(xs, None, None, ms, vs, 0.1, 1e-5, False)
        fd.add_output(y)
    (y,) = fd.execute([x, running_mean, running_var])
    expected = F.batch_norm(x.float(), running_mean, running_var, training=False, eps=1e-5)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), expected, rtol=1.6e-2, atol=1e-2)


def test_batch_norm_eval_without_running_stats_is_an_error():
    with pytest.raises(NvfuseError, match="running_mean and running_var"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1, -1], contiguity=True)
            fd.ops.batch_norm(x, None, None, None, None, 0.1, 1e-5, False)


def _logical_right_shift_reference(values, shifts, bits):
    out = []
    for x, k in zip(values, shifts):
        if k < 0 or k >= bits:
            out.append(0)
            continue
        u = (x % (1 << bits)) >> k
        out.append(u - (1 << bits) if u >= 1 << (bits - 1) else u)
    return out


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("dtype,bits", [(torch.int64, 64), (torch.int32, 32)], ids=str)
def test_logical_right_shift_shifts_in_zeros(device, dtype, bits):
    a = torch.tensor([-1, -8, 5, -(2 ** (bits - 1)), 123456, -3, 7, -100], dtype=dtype)
    s = torch.tensor([0, 1, 2, bits - 1, 3, bits, bits + 5, 4], dtype=dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.logical_right_shift(fd.from_pytorch(a), fd.from_pytorch(s)))
    (out,) = fd.execute([a.to(device), s.to(device)])
    assert out.dtype == dtype
    assert out.cpu().tolist() == _logical_right_shift_reference(a.tolist(), s.tolist(), bits)


def test_logical_right_shift_rejects_floats():
    with pytest.raises(NvfuseError, match="Int or Int32"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1], contiguity=True)
            fd.ops.logical_right_shift(t, 1)


@pytest.mark.parametrize("device", _devices())
def test_index_select_takes_a_0d_index_as_torch(device):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        i = fd.define_tensor([], contiguity=[], dtype=DataType.Int)
        fd.add_output(fd.ops.index_select(t, i, 0))
    x, index = torch.randn(4, 3, device=device), torch.tensor(2, device=device)
    (out,) = fd.execute([x, index])
    torch.testing.assert_close(out, torch.index_select(x, 0, index))


@pytest.mark.parametrize("device", _devices())
def test_scatter_with_a_scalar_src_writes_the_value(device):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        i = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Int)
        fd.add_output(fd.ops.scatter(t, i, 1.5, 1))
    x = torch.randn(4, 3, device=device)
    index = torch.tensor([[0], [2], [1], [0]], device=device)
    (out,) = fd.execute([x, index])
    torch.testing.assert_close(out, torch.scatter(x, 1, index, 1.5))
