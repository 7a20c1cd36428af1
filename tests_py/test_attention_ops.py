"""sdpfa_fwd / sdpfa_bwd (flash attention through ATen) against torch,
their definition errors, and the attention and MLP blocks built around
them."""

import pytest
import torch
import torch.nn.functional as F

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError, InputError, UnsupportedError
from workloads.block_definitions import (
    attention_fd,
    attention_inputs,
    attention_torch,
    mlp_fd,
    mlp_inputs,
    mlp_torch,
)
from fusion_helpers import DEVICES

DTYPES = {"bf16": (torch.bfloat16, DataType.BFloat16), "fp16": (torch.float16, DataType.Half)}


def _forward_fd(nv, dropout_p, is_causal, scale):
    with FusionDefinition() as fd:
        q, k, v = (fd.define_tensor([-1, -1, -1, -1], contiguity=True, dtype=nv) for _ in range(3))
        outs = fd.ops.sdpfa_fwd(q, k, v, dropout_p=dropout_p, is_causal=is_causal, scale=scale)
        for out in outs:
            fd.add_output(out)
    return fd


def _backward_fd(nv, dropout_p, is_causal, scale, rng_dtype=DataType.UInt64):
    """The backward as Thunder defines it: its own fusion, the forward's
    RNG state among its inputs (UInt64, as torch 2.7 and later return it;
    Int as scripts for older torch spell it)."""
    with FusionDefinition() as fd:
        grad, q, k, v, out = (
            fd.define_tensor([-1, -1, -1, -1], contiguity=True, dtype=nv) for _ in range(5)
        )
        lse = fd.define_tensor([-1, -1, -1], contiguity=True, dtype=DataType.Float)
        seed = fd.define_tensor([2], contiguity=True, dtype=rng_dtype)
        offset = fd.define_tensor([], dtype=rng_dtype)
        for g in fd.ops.sdpfa_bwd(
            grad, q, k, v, out, lse, dropout_p, is_causal, seed, offset, scale
        ):
            fd.add_output(g)
    return fd


def _qkv(dtype, device, seq_q=64, seq_k=64):
    torch.manual_seed(0)
    return [torch.randn(2, 4, s, 64, dtype=dtype, device=device) for s in (seq_q, seq_k, seq_k)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpfa_forward_and_backward_match_torch_autograd(dtype, is_causal, scale, device):
    torch_dtype, nv = DTYPES[dtype]
    seq_k = 48 if is_causal else 80
    q, k, v = _qkv(torch_dtype, device, seq_q=48, seq_k=seq_k)
    out, lse, seed, offset = _forward_fd(nv, 0.0, is_causal, scale).execute([q, k, v])
    assert lse.shape == (2, 4, 48) and lse.dtype == torch.float32
    assert seed.shape == (2,) and offset.shape == ()
    assert seed.dtype == offset.dtype == torch.uint64

    leaves = [t.float().requires_grad_() for t in (q, k, v)]
    expected = F.scaled_dot_product_attention(*leaves, is_causal=is_causal, scale=scale)
    torch.testing.assert_close(out.float(), expected, rtol=2e-2, atol=2e-2)
    grad = torch.randn_like(out)
    expected.backward(grad.float())

    grads = _backward_fd(nv, 0.0, is_causal, scale).execute([grad, q, k, v, out, lse, seed, offset])
    for got, leaf in zip(grads, leaves):
        assert got.dtype == torch_dtype and got.shape == leaf.shape
        torch.testing.assert_close(got.float(), leaf.grad, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_sdpfa_backward_takes_an_rng_state_spelled_int(device):
    """Scripts written for torch before 2.7 define the RNG state as Int
    tensors; the backward reads the same words."""
    q, k, v = _qkv(torch.bfloat16, device)
    out, lse, seed, offset = _forward_fd(DataType.BFloat16, 0.0, False, None).execute([q, k, v])
    grad = torch.randn_like(out)
    as_uint = _backward_fd(DataType.BFloat16, 0.0, False, None).execute(
        [grad, q, k, v, out, lse, seed, offset]
    )
    as_int = _backward_fd(DataType.BFloat16, 0.0, False, None, DataType.Int).execute(
        [grad, q, k, v, out, lse, seed.view(torch.int64), offset.view(torch.int64)]
    )
    for a, b in zip(as_uint, as_int):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_sdpfa_backward_refuses_a_float_rng_state():
    with pytest.raises(DefinitionTypeError, match="philox_seed and philox_offset must be UInt64"):
        _backward_fd(DataType.BFloat16, 0.0, False, None, DataType.Float)


@pytest.mark.gpu
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpfa_backward_of_a_permuted_gradient_matches_torch(is_causal):
    """The gradient as a tensor-parallel backward hands it over: a permuted
    view of [B, S, H, Dh] (cuDNN's backward takes it, as flash's did)."""
    q, k, v = _qkv(torch.bfloat16, "cuda", seq_q=128, seq_k=128)
    out, lse, seed, offset = _forward_fd(DataType.BFloat16, 0.0, is_causal, None).execute([q, k, v])
    grad = torch.randn(2, 128, 4, 64, dtype=torch.bfloat16, device="cuda").permute(0, 2, 1, 3)
    leaves = [t.float().requires_grad_() for t in (q, k, v)]
    F.scaled_dot_product_attention(*leaves, is_causal=is_causal).backward(grad.float())
    with FusionDefinition() as fd:
        grad_in = fd.define_tensor(
            [-1, -1, -1, -1], dtype=DataType.BFloat16, stride_order=[3, 1, 2, 0]
        )
        q_in, k_in, v_in, out_in = (
            fd.define_tensor([-1, -1, -1, -1], contiguity=True, dtype=DataType.BFloat16)
            for _ in range(4)
        )
        lse_in = fd.define_tensor([-1, -1, -1], contiguity=True, dtype=DataType.Float)
        seed_in = fd.define_tensor([2], contiguity=True, dtype=DataType.UInt64)
        offset_in = fd.define_tensor([], dtype=DataType.UInt64)
        for g in fd.ops.sdpfa_bwd(
            grad_in, q_in, k_in, v_in, out_in, lse_in, 0.0, is_causal, seed_in, offset_in
        ):
            fd.add_output(g)
    grads = fd.execute([grad, q, k, v, out, lse, seed, offset])
    for got, leaf in zip(grads, leaves):
        torch.testing.assert_close(got.float(), leaf.grad, rtol=5e-2, atol=5e-2)


@pytest.mark.gpu
def test_sdpfa_dropout_follows_torch_generator_and_backward_replays_it():
    q, k, v = _qkv(torch.bfloat16, "cuda")
    fwd = _forward_fd(DataType.BFloat16, 0.25, False, None)
    torch.manual_seed(7)
    first = fwd.execute([q, k, v])
    torch.manual_seed(7)
    again = fwd.execute([q, k, v])
    later = fwd.execute([q, k, v])
    assert torch.equal(first[0], again[0])  # the same seed: the same dropout
    assert not torch.equal(first[0], later[0])  # the generator moved on
    # torch's own kernel with the same generator state drops the same elements.
    torch.manual_seed(7)
    reference = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.25)
    torch.testing.assert_close(first[0], reference[0], rtol=0, atol=0)

    grad = torch.randn_like(q)
    mine = _backward_fd(DataType.BFloat16, 0.25, False, None).execute([grad, q, k, v, *first])
    theirs = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        grad,
        q,
        k,
        v,
        reference[0],
        reference[1],
        None,
        None,
        64,
        64,
        0.25,
        False,
        reference[6],
        reference[7],
    )
    for got, expected in zip(mine, theirs):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_causal_sdpfa_of_unequal_lengths_is_an_input_error(device):
    q, k, v = _qkv(torch.bfloat16, device, seq_q=16, seq_k=32)
    with pytest.raises(
        InputError, match="is_causal needs equal query and key lengths, got 16 and 32"
    ):
        _forward_fd(DataType.BFloat16, 0.0, True, None).execute([q, k, v])
    # Nothing is left broken: the same definition runs on good inputs.
    q, k, v = _qkv(torch.bfloat16, device, seq_q=16, seq_k=16)
    _forward_fd(DataType.BFloat16, 0.0, True, None).execute([q, k, v])


@pytest.mark.gpu
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpfa_log_sumexp_without_dropout_is_the_flash_kernels(is_causal):
    # Without dropout the forward may run on cuDNN; its logsumexp must be
    # what the flash backward expects.
    q, k, v = _qkv(torch.bfloat16, "cuda", seq_q=128, seq_k=128)
    out, lse, _, _ = _forward_fd(DataType.BFloat16, 0.0, is_causal, None).execute([q, k, v])
    flash = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, is_causal)
    torch.testing.assert_close(lse, flash[1], rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(out, flash[0], rtol=2e-2, atol=2e-2)


@pytest.fixture
def flash_attention_only():
    import nvfuse

    on = nvfuse._C.cudnn_attention()
    nvfuse._C.set_cudnn_attention(False)
    yield
    nvfuse._C.set_cudnn_attention(on)


@pytest.mark.gpu
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpfa_without_cudnn_is_the_flash_kernels_bit_for_bit(is_causal, flash_attention_only):
    # What as_nvfuser() asks for: Thunder's tests compare nvFuser's sdpfa
    # results with torch's flash kernels at bf16's default tolerances.
    q, k, v = _qkv(torch.bfloat16, "cuda", seq_q=128, seq_k=128)
    out, lse, seed, offset = _forward_fd(DataType.BFloat16, 0.0, is_causal, None).execute([q, k, v])
    flash = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, is_causal)
    torch.testing.assert_close(out, flash[0], rtol=0, atol=0)
    torch.testing.assert_close(lse, flash[1], rtol=0, atol=0)
    grad = torch.randn_like(out)
    grads = _backward_fd(DataType.BFloat16, 0.0, is_causal, None).execute(
        [grad, q, k, v, out, lse, seed, offset]
    )
    want = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        grad, q, k, v, out, lse, flash[2], flash[3], 128, 128, 0.0, is_causal, flash[6], flash[7]
    )
    for got, expected in zip(grads, want):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_sdpfa_dropout_on_the_cpu_is_unsupported():
    q, k, v = _qkv(torch.bfloat16, "cpu")
    with pytest.raises(UnsupportedError, match="dropout_p = 0.25 needs CUDA"):
        _forward_fd(DataType.BFloat16, 0.25, False, None).execute([q, k, v])


def test_sdpfa_of_float_is_a_type_error():
    with pytest.raises(DefinitionTypeError, match="query must be Half or BFloat16"):
        _forward_fd(DataType.Float, 0.0, False, None)


def test_sdpfa_of_3d_tensors_is_a_definition_error():
    with pytest.raises(DefinitionError, match=r"key must be 4-D \[batch, heads"):
        with FusionDefinition() as fd:
            q = fd.define_tensor([-1, -1, -1, -1], contiguity=True, dtype=DataType.Half)
            k = fd.define_tensor([-1, -1, -1], contiguity=True, dtype=DataType.Half)
            fd.ops.sdpfa_fwd(q, k, q)


def test_sdpfa_of_different_head_dims_is_a_definition_error():
    with pytest.raises(DefinitionError, match="query and key head dims differ"):
        with FusionDefinition() as fd:
            q = fd.define_tensor([2, 4, 8, 64], contiguity=True, dtype=DataType.Half)
            k = fd.define_tensor([2, 4, 8, 32], contiguity=True, dtype=DataType.Half)
            fd.ops.sdpfa_fwd(q, k, k)


def test_sdpfa_with_an_integer_dropout_is_a_type_error():
    with pytest.raises(DefinitionTypeError, match="is_causal must be a Bool scalar"):
        _forward_fd(DataType.Half, 0.0, 1, None)


def test_sdpfa_prints_and_reruns_from_its_repro():
    fd = _forward_fd(DataType.BFloat16, 0.0, True, 0.125)
    text = str(fd)
    assert "fd.ops.sdpfa_fwd(T0, T1, T2, dropout_p=S3, is_causal=S4, scale=S5)" in text
    scope = {}
    exec(text, scope)
    assert scope["fd"].id() == fd.id()  # the same definition, from the cache


@pytest.mark.parametrize("device", DEVICES)
def test_attention_block_matches_torch_and_copies_nothing_between_aten_calls(device):
    batch, seq, heads, head_dim = 2, 32, 4, 16
    torch.manual_seed(0)
    inputs = attention_inputs(batch, seq, heads, head_dim, torch.bfloat16, device)
    fd = attention_fd(batch, seq, heads, head_dim, torch.bfloat16)
    (out,) = fd.execute(inputs)
    expected = attention_torch(*inputs, heads)
    torch.testing.assert_close(out.float(), expected.float(), rtol=3e-2, atol=3e-2)
    kinds = [kind for kind, _ in fd.segment_summary()]
    # The split, head permutes and reshapes are views; nothing else is a kernel.
    assert kinds == ["aten", "view", "view", "view", "aten", "view", "aten"], kinds


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_block_matches_torch_with_the_gelu_in_one_kernel(device):
    torch.manual_seed(0)
    inputs = mlp_inputs(64, 32, torch.bfloat16, device)
    fd = mlp_fd(torch.bfloat16)
    (out,) = fd.execute(inputs)
    torch.testing.assert_close(out.float(), mlp_torch(*inputs).float(), rtol=3e-2, atol=3e-2)
    assert [kind for kind, _ in fd.segment_summary()] == ["aten", "fused", "aten"]
