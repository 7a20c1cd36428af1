"""The ATen ops of real model graphs that nvfuse translates
(translate.py, translate_indexing.py): each compiled against eager, and
fused (not left to ATen)."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo
from nvfuse.dynamo.support import LEFT_TO_ATEN

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _fused_targets():
    return {op for r in nvfuse.dynamo.reports() for _, ops in r.fusions for op in ops}


def _left_targets():
    return {target for r in nvfuse.dynamo.reports() for _, target, _ in r.unfused}


def _matches_eager(fn, *inputs, grad=False):
    got = torch.compile(fn, backend="nvfuse")(*inputs)
    want = fn(*inputs)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    ):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    return got


CASES = {
    "aten.full_like.default": lambda x: (torch.full_like(x, 3.0) * x).exp(),
    "aten.arange.start_step": lambda x: (
        x * torch.arange(2, 2 + 3 * x.shape[-1], 3, device=x.device)
    ),
    "aten.any.dim": lambda x: (x > 0.5).any(-1) & (x.sum(-1) > 0),
    "aten.cumsum.default": lambda x: torch.cumsum(x * 2, dim=-1).sin(),
    "aten.constant_pad_nd.default": lambda x: F.pad(x * 2, (1, 2, 0, 1), value=-1.5).exp(),
    "aten.split_with_sizes.default": lambda x: tuple(p.exp() for p in (x * 2).split([3, 5], -1)),
    "aten.select.int": lambda x: (x * 2)[:, -2].exp(),
    "aten.index.Tensor": lambda x: (x * 2)[torch.tensor([3, -1, 0], device=x.device)].exp(),
    "aten.slice_scatter.default": lambda x: torch.slice_scatter(
        x * 0, (x * 2)[:, 2:5], 1, 2, 5
    ).exp(),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("target", list(CASES))
def test_op_fuses_and_matches_eager(target, device):
    torch.manual_seed(0)
    _matches_eager(CASES[target], torch.rand(4, 8, device=device))
    assert target in _fused_targets(), nvfuse.dynamo.reports()


@pytest.mark.parametrize("device", DEVICES)
def test_index_with_broadcast_index_tensors(device):
    # The padding-mask lookup of transformers' mask functions:
    # x[batch[:, None], positions[None, :]].
    def f(x, rows, cols):
        return (x.cumsum(-1))[rows[:, None, None], cols[None, :, None]] * 2

    x = torch.randint(0, 5, (3, 7), device=device)
    rows = torch.tensor([2, 0, 1], device=device)
    cols = torch.tensor([6, 0, 3, 3], device=device)
    _matches_eager(f, x, rows, cols)
    assert "aten.index.Tensor" in _fused_targets()


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_fuses_and_its_backward_runs_as_atens_kernel(device):
    torch.manual_seed(0)
    table = torch.nn.Embedding(50, 16, padding_idx=3).to(device)
    ids = torch.tensor([[1, 3, 3, 7], [7, 7, 0, 49]], device=device)

    def f(ids):
        return (table(ids) * 2).tanh().sum()

    torch.compile(f, backend="nvfuse")(ids).backward()
    got = table.weight.grad.clone()
    table.weight.grad = None
    f(ids).backward()
    torch.testing.assert_close(got, table.weight.grad, rtol=1e-5, atol=1e-6)
    assert got[3].abs().sum() == 0  # no gradient into padding_idx
    assert "aten.embedding.default" in _fused_targets()
    reasons = {
        reason
        for r in nvfuse.dynamo.reports()
        for _, target, reason in r.unfused
        if target == "aten.embedding_dense_backward.default"
    }
    assert reasons == {LEFT_TO_ATEN[torch.ops.aten.embedding_dense_backward.default]}


def _drawn_twice_from_one_seed(fn, x):
    """`fn` compiled and run twice after the same torch.manual_seed: the
    draws must repeat. Returns the first result."""
    compiled = torch.compile(fn, backend="nvfuse")
    torch.manual_seed(5)
    first = compiled(x)
    torch.manual_seed(5)
    assert torch.equal(first, compiled(x))
    return first


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_draws_in_the_fusion_with_torch_statistics(device):
    def f(x):
        return F.dropout(x * 2, p=0.25, training=True) * 3

    first = _drawn_twice_from_one_seed(f, torch.ones(256, 256, device=device))
    assert abs((first == 0).float().mean().item() - 0.25) < 0.02
    torch.testing.assert_close(first[first != 0], torch.full_like(first[first != 0], 6 / 0.75))
    assert "aten.native_dropout.default" in _fused_targets()


@pytest.mark.parametrize("device", DEVICES)
def test_cat_of_an_expanded_class_token(device):
    # ViT's embeddings: a class token expanded over the batch, concatenated
    # with the patches, plus positions.
    def f(cls, patches, positions):
        return torch.cat([cls.expand(patches.shape[0], -1, -1), patches], 1) + positions

    cls = torch.randn(1, 1, 8, device=device)
    patches = torch.randn(3, 8, 4, device=device).transpose(1, 2)
    positions = torch.randn(1, 5, 8, device=device)
    _matches_eager(f, cls, patches, positions)


def test_ops_nvfuse_lacks_are_reported_as_such():
    def f(x):
        return F.max_pool2d((x * 2).relu(), 2, ceil_mode=True).sum()

    torch.compile(f, backend="nvfuse")(torch.randn(1, 2, 8, 8))
    assert "aten.max_pool2d_with_indices.default" in _left_targets()
    (report,) = nvfuse.dynamo.reports()
    assert "non-GEMM ops in nvfuse" in str(report)
    assert report.fused_ops < report.non_gemm_ops


@pytest.mark.parametrize("device", DEVICES)
def test_cat_skips_a_legacy_empty_operand(device):
    # transformers' GPT-2 concatenates its keys onto a torch.tensor([]).
    def f(keys):
        return torch.cat([torch.tensor([], device=keys.device), keys * 2], -2) * 0.5

    _matches_eager(f, torch.randn(2, 4, 16, 8, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_gpt2_trains_with_dropout(device):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        vocab_size=1000,
        n_positions=64,
        n_embd=64,
        n_layer=1,
        n_head=4,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.1,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config).to(device).train()
    ids = torch.randint(0, 1000, (2, 16), device=device)
    out = torch.compile(model, backend="nvfuse")(input_ids=ids, labels=ids)
    out.loss.backward()
    assert torch.isfinite(out.loss) and model.lm_head.weight.grad is not None
    assert "aten.native_dropout.default" in _fused_targets()


@pytest.mark.parametrize("device", DEVICES)
def test_stochastic_depth_draws_in_the_fusion(device):
    # timm's drop_path: x.new_empty(...).bernoulli_(keep) / keep, per sample.
    def drop_path(x, keep=0.75):
        mask = x.new_empty((x.shape[0], 1)).bernoulli_(keep)
        return x * mask / keep + 1

    first = _drawn_twice_from_one_seed(drop_path, torch.ones(4096, 8, device=device))
    kept = first[:, 0] != 1
    assert abs(kept.float().mean().item() - 0.75) < 0.03
    torch.testing.assert_close(first[kept], torch.full_like(first[kept], 1 + 1 / 0.75))
    fused = _fused_targets()
    assert "aten.bernoulli.p" in fused and "aten.empty.memory_format" in fused


def test_clone_of_an_expand_is_written_dense_by_a_kernel():
    """Llama's repeat_kv: a head axis expanded, then cloned and viewed.
    torch's clone writes every element; the fusion's output is dense, so a
    generated kernel writes it (a stride-0 output ran on the reference
    evaluator)."""
    from .conftest import aten_graph, fused_regions, record_definitions

    def repeat_kv(k):
        rotated = k * 2 + 1
        b, h, s, d = rotated.shape
        return rotated[:, :, None].expand(b, h, 3, s, d).clone().reshape(b, h * 3, s, d)

    k = torch.randn(2, 2, 5, 8)
    gm = aten_graph(repeat_kv, k)
    fused, regions = fused_regions(gm)
    seen = record_definitions(regions)
    got = fused(k)
    got = got[0] if isinstance(got, (tuple, list)) else got
    torch.testing.assert_close(got, repeat_kv(k))
    assert got.is_contiguous()
    ((fd, args),) = seen
    assert [s.segment_kind for s in fd.segment(args)] == ["fused"]
    assert "// (runs on the ATen reference evaluator" not in fd.cuda_code_for(args)


@pytest.mark.gpu
def test_clone_of_an_expand_matches_eager_on_cuda():
    def repeat_kv(k):
        b, h, s, d = k.shape
        return (k * 2 + 1)[:, :, None].expand(b, h, 3, s, d).clone().reshape(b, h * 3, s, d)

    got = _matches_eager(repeat_kv, torch.randn(2, 2, 5, 8, device="cuda"))
    assert got.is_contiguous()
