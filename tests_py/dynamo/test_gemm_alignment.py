"""GEMMs cuBLAS would read unaligned (an odd vocabulary's LM head) run on
zero-padded operands (passes/gemm_alignment.py)."""

import pytest
import copy

import torch
import torch.nn.functional as F

import nvfuse.dynamo
from nvfuse.dynamo.passes.gemm_alignment import (
    pad_unaligned_gemms,
    padded_gemm,
    padded_sizes,
)
from nvfuse.dynamo.passes.in_place_updates import mark_in_place_updates
from nvfuse.dynamo.passes.partition import partition_regions
from nvfuse.dynamo.passes.regions import install_regions
from nvfuse.dynamo.passes.weight_layouts import copy_into_layouts, copy_into_padded
from nvfuse.dynamo.region import FusedRegion
from nvfuse.dynamo.support import NvfuseSupport

from .conftest import aten_graph

VOCAB, WIDTH, TOKENS = 1001, 64, 24


def _meta(*shape, transposed=False, dtype=torch.bfloat16):
    if transposed:
        return torch.empty(*reversed(shape), dtype=dtype, device="meta").t()
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_the_lm_head_pads_the_vocabulary_of_its_logits():
    hidden, weight_t = _meta(8192, 768), _meta(768, 50257, transposed=True)
    assert padded_sizes(hidden, weight_t) == (8192, 768, 50264)


def test_the_input_gradient_pads_the_vocabulary_it_sums_over():
    grad_logits, weight = _meta(8192, 50257), _meta(50257, 768)
    assert padded_sizes(grad_logits, weight) == (8192, 50264, 768)


def test_the_weight_gradient_pads_the_rows_of_a_transposed_operand():
    grad_logits_t, hidden = _meta(50257, 8192, transposed=True), _meta(8192, 768)
    assert padded_sizes(grad_logits_t, hidden) == (50264, 8192, 768)


def test_aligned_gemms_and_fp32_multiples_of_four_are_left_alone():
    assert padded_sizes(_meta(8192, 768), _meta(768, 50264, transposed=True)) is None
    fp32 = dict(dtype=torch.float32)
    assert padded_sizes(_meta(100, 36, **fp32), _meta(36, 100, **fp32)) is None
    assert padded_sizes(_meta(100, 36), _meta(36, 100)) == (100, 40, 104)


@pytest.mark.parametrize("a_transposed", [False, True])
@pytest.mark.parametrize("b_transposed", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_a_padded_gemm_computes_the_product(a_transposed, b_transposed, with_bias):
    torch.manual_seed(0)
    a = torch.randn(30, 21) if not a_transposed else torch.randn(21, 30).t()
    b = torch.randn(21, 13) if not b_transposed else torch.randn(13, 21).t()
    bias = torch.randn(13) if with_bias else None
    padded_a, padded_b = _padded(a, 32, 24), _padded(b, 24, 16)
    assert padded_a.stride()[0] == 1 if a_transposed else padded_a.stride()[1] == 1
    got = padded_gemm(bias, padded_a, padded_b, 30, 13)
    want = a @ b + (bias if with_bias else 0)
    assert got.shape == (30, 13)
    torch.testing.assert_close(got, want)


def _padded(x, rows, cols):
    """`x` zero-padded to [rows, cols] in its memory order, as the pass's
    padded copies are."""
    if x.stride()[0] == 1 and x.stride()[1] != 1:
        return _padded(x.t(), cols, rows).t()
    return F.pad(x, (0, cols - x.shape[1], 0, rows - x.shape[0]))


def _padded_copies(gm):
    """The grouped padded copies the pass made."""
    return [n for n in gm.graph.nodes if n.target is copy_into_padded]


def _lm_head_backward(grad_logits, hidden, weight):
    """The LM head's input and weight gradients: both read grad_logits,
    one of them transposed."""
    return grad_logits @ weight, grad_logits.t() @ hidden


def test_the_gradients_of_an_lm_head_share_one_padded_copy():
    torch.manual_seed(0)
    grad, hidden, weight = (
        torch.randn(TOKENS, VOCAB),
        torch.randn(TOKENS, WIDTH),
        torch.randn(VOCAB, WIDTH),
    )
    gm = aten_graph(_lm_head_backward, grad, hidden, weight)
    assert pad_unaligned_gemms(gm, devices=("cpu",), min_flops=0) == 2
    pads = _padded_copies(gm)
    grad_pads = [n for n in pads if n.args[0][0].name.startswith("grad")]
    assert len(grad_pads) == 1
    assert not [n for n in gm.graph.nodes if n.op == "call_module"]  # no one-op regions
    for got, want in zip(gm(grad, hidden, weight), _lm_head_backward(grad, hidden, weight)):
        torch.testing.assert_close(got, want)


def _lm_head_loss(hidden, weight, labels):
    logits = hidden @ weight.t()
    return logits, F.cross_entropy(logits.float(), labels)


def _fused_graph(fn, *inputs):
    gm = aten_graph(fn, *inputs)
    mark_in_place_updates(gm)
    fused, _ = partition_regions(gm, NvfuseSupport())
    install_regions(fused)
    return fused


def test_regions_read_the_padded_logits_and_the_output_a_dense_copy():
    torch.manual_seed(0)
    hidden, weight = torch.randn(TOKENS, WIDTH), torch.randn(VOCAB, WIDTH)
    labels = torch.randint(0, VOCAB, (TOKENS,))
    gm = _fused_graph(_lm_head_loss, hidden, weight, labels)
    assert pad_unaligned_gemms(gm, devices=("cpu",), min_flops=0) == 1
    (gemm,) = [n for n in gm.graph.nodes if n.target is padded_gemm]
    regions = [u for u in gemm.users if u.op == "call_module"]
    assert [type(getattr(gm, u.target)) for u in regions] == [FusedRegion]
    assert [u.target for u in gemm.users if u not in regions] == [copy_into_layouts]
    logits, loss = gm(hidden, weight, labels)
    want_logits, want_loss = _lm_head_loss(hidden, weight, labels)
    assert logits.stride() == want_logits.stride()
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(loss, want_loss)


def test_cpu_gemms_are_not_padded():
    hidden, weight = torch.randn(TOKENS, WIDTH), torch.randn(VOCAB, WIDTH)
    gm = _fused_graph(_lm_head_loss, hidden, weight, torch.zeros(TOKENS, dtype=torch.long))
    assert pad_unaligned_gemms(gm, min_flops=0) == 0


@pytest.mark.gpu
def test_an_odd_vocabulary_trains_on_padded_gemms():
    torch.manual_seed(0)
    tokens, width, vocab = 4096, 768, 50257
    hidden = torch.randn(tokens, width, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    weight = torch.randn(vocab, width, device="cuda", dtype=torch.bfloat16) * 0.02
    weight.requires_grad_()
    labels = torch.randint(0, vocab, (tokens,), device="cuda")

    def step(fn):
        logits, loss = fn(hidden, weight, labels)
        loss.backward()
        grads = hidden.grad.clone(), weight.grad.clone()
        hidden.grad = weight.grad = None
        return logits, loss, grads

    nvfuse.dynamo.clear_reports()
    got = step(torch.compile(_lm_head_loss, backend="nvfuse"))
    want = step(_lm_head_loss)
    padded = {r.kind: r.padded_gemms for r in nvfuse.dynamo.reports()}
    assert padded == {"forward": 1, "backward": 2}
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1], rtol=1e-3, atol=1e-3)
    for g, w in zip(got[2], want[2]):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-3)


@pytest.fixture
def cpu_padding(monkeypatch):
    """The backend pads CPU GEMMs of any size, as it pads CUDA ones."""
    from nvfuse.dynamo import pipeline

    def pad_on_cpu(gm, user_outputs=frozenset()):
        return pad_unaligned_gemms(gm, ("cpu",), 0, user_outputs)

    monkeypatch.setattr(pipeline, "pad_unaligned_gemms", pad_on_cpu)


def _lm_head(hidden, weight):
    return (hidden @ weight.t()).view(2, TOKENS // 2, VOCAB)


def test_logits_only_the_user_reads_keep_their_padded_rows(cpu_padding):
    torch.manual_seed(0)
    hidden = torch.randn(TOKENS, WIDTH, requires_grad=True)
    weight = torch.randn(VOCAB, WIDTH, requires_grad=True)
    logits = torch.compile(_lm_head, backend="nvfuse")(hidden, weight)
    want = _lm_head(hidden, weight)
    padded_vocab = -(-VOCAB // 4) * 4  # float32 rows 16 bytes apart
    assert logits.stride() == (TOKENS // 2 * padded_vocab, padded_vocab, 1)
    torch.testing.assert_close(logits, want)
    # The backward reads the user's gradient of the padded logits as usual.
    grad = torch.randn_like(want)
    got_grads = torch.autograd.grad(logits, (hidden, weight), grad)
    want_grads = torch.autograd.grad(want, (hidden, weight), grad)
    for got, expected in zip(got_grads, want_grads):
        assert got.stride() == expected.stride()
        torch.testing.assert_close(got, expected)


def _logits_and_loss(hidden, weight, labels):
    """BERT's masked-LM head: logits viewed [batch, seq, vocab], their loss
    read through a view back to [tokens, vocab]."""
    logits = _lm_head(hidden, weight)
    return logits, F.cross_entropy(logits.view(-1, VOCAB), labels)


def test_logits_the_loss_reads_through_views_keep_their_padded_rows(cpu_padding):
    """Inference: the loss (a region) reads the logits through a view that
    merges the rows back, the user gets them; no dense copy."""
    torch.manual_seed(0)
    hidden, weight = torch.randn(TOKENS, WIDTH), torch.randn(VOCAB, WIDTH)
    labels = torch.randint(0, VOCAB, (TOKENS,))
    with torch.no_grad():
        logits, loss = torch.compile(_logits_and_loss, backend="nvfuse")(hidden, weight, labels)
    want_logits, want_loss = _logits_and_loss(hidden, weight, labels)
    assert logits.stride()[-2] == -(-VOCAB // 4) * 4
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(loss, want_loss)


def test_logits_saved_for_the_backward_stay_dense(cpu_padding):
    """The loss in the same graph: its backward reads the saved logits, so
    the graph returns them dense, as its meta value says."""
    torch.manual_seed(0)
    hidden = torch.randn(TOKENS, WIDTH, requires_grad=True)
    weight = torch.randn(VOCAB, WIDTH, requires_grad=True)
    labels = torch.randint(0, VOCAB, (TOKENS,))
    logits, loss = torch.compile(_lm_head_loss, backend="nvfuse")(hidden, weight, labels)
    want_logits, want_loss = _lm_head_loss(hidden, weight, labels)
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(loss, want_loss)
    got = torch.autograd.grad(loss, (hidden, weight))
    want = torch.autograd.grad(want_loss, (hidden, weight))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_a_language_model_trains_on_padded_logits(cpu_padding):
    """transformers' GPT-2 with an odd vocabulary: the logits reach the
    loss (a graph of its own, after a graph break) with padded rows; the
    loss and every gradient match eager's."""
    import workloads.model_zoo as zoo

    sizes = dict(zoo._GPT2_SIZES)
    sizes["tiny"] = (1001,) + tuple(sizes["tiny"][1:])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zoo, "_GPT2_SIZES", sizes)
        model = zoo.build("gpt2", "tiny")
    batch = model.batch("cpu")
    eager = copy.deepcopy(model.model)
    out = torch.compile(model.model, backend="nvfuse")(**batch)
    want = eager(**batch)
    assert out.logits.stride()[-2] == 1004
    torch.testing.assert_close(out.logits, want.logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out.loss, want.loss, rtol=1e-4, atol=1e-4)
    out.loss.backward()
    want.loss.backward()
    for (name, p), q in zip(model.model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5, msg=name)


@pytest.mark.parametrize("sizes,strides", [((7, 5), (5, 1)), ((4, 9), (9, 1)), ((7, 5), (1, 7))])
def test_padded_copies_hold_the_values_then_zeros_on_the_cpu(sizes, strides):
    """copy_into_padded on the CPU (ATen's copy): the source's values, then
    zeros along the one axis that grows, in the asked layout."""
    source = torch.arange(20.0).reshape(4, 5)
    (padded,) = copy_into_padded([source], [list(sizes)], [list(strides)])
    want = F.pad(source, (0, sizes[1] - 5, 0, sizes[0] - 4))
    assert padded.stride() == strides
    assert torch.equal(padded, want)


def test_bad_padded_sizes_get_typed_errors_naming_the_tensor():
    x = torch.zeros(4, 5)
    with pytest.raises(nvfuse.InputError, match="tensor 1 pad more than one axis"):
        copy_into_padded([x, x], [[4, 8], [6, 8]], [[8, 1], [8, 1]])
    with pytest.raises(nvfuse.InputError, match="tensor 0 are smaller than its own"):
        copy_into_padded([x], [[3, 5]], [[5, 1]])
    with pytest.raises(nvfuse.InputError, match="do not lay out its sizes"):
        copy_into_padded([x], [[4, 8]], [[5, 1]])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64])
def test_padded_copies_have_atens_bits_on_the_gpu(dtype):
    """The grouped kernel's padded copies: rows of odd widths padded at
    their end (every alignment of a source row), rows added at the end
    (a weight's vocabulary rows), a column-major operand's columns."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    torch.manual_seed(0)
    sources = [torch.randint(0, 100, (37, w), device="cuda").to(dtype) for w in (49, 50, 51, 53)]
    sizes = [[37, 56]] * 4
    strides = [[56, 1]] * 4
    sources.append(torch.randint(0, 100, (50257 // 64, 48), device="cuda").to(dtype))
    sizes.append([792, 48])
    strides.append([48, 1])
    sources.append(torch.randint(0, 100, (30, 77), device="cuda").to(dtype).t())  # [77, 30]
    sizes.append([80, 30])
    strides.append([1, 80])
    # Rows walked as rows (long ones): a logits gradient's odd vocabulary
    # padded at every alignment of its rows' starts, rows added under a
    # wide matrix, and strided rows (a sliced source) padded by two.
    for width in range(5001, 5018):
        sources.append(torch.randint(0, 100, (9, width), device="cuda").to(dtype))
        sizes.append([9, 5024])
        strides.append([5024, 1])
    sources.append(torch.randint(0, 100, (5, 4100), device="cuda").to(dtype))
    sizes.append([8, 4100])
    strides.append([4100, 1])
    sources.append(torch.randint(0, 100, (3, 2999), device="cuda").to(dtype)[:, 1:])
    sizes.append([3, 3000])
    strides.append([3000, 1])
    copies = copy_into_padded(sources, sizes, strides)
    for source, size, stride, padded in zip(sources, sizes, strides, copies):
        pad = [0, size[1] - source.shape[1], 0, size[0] - source.shape[0]]
        assert padded.stride() == tuple(stride)
        assert torch.equal(padded.cpu(), F.pad(source.cpu(), pad))
