"""An LM head whose logits feed only a cross-entropy loss runs chunk by
chunk (linear_cross_entropy.py), rewritten on Dynamo's graph
(lm_head_losses.py): torch's loss and gradients, without the whole
logits; everything else keeps torch's composite."""

import collections

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import nvfuse.dynamo
from nvfuse.dynamo import linear_cross_entropy as chunked
from nvfuse.dynamo import lm_head_losses
from nvfuse.dynamo.linear_cross_entropy import chunk_rows, linear_cross_entropy

ROWS, HIDDEN = 40, 16


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 16 rows of a 1000-word vocabulary, and the rewrite for
    logits of any size."""
    monkeypatch.setattr(chunked, "CHUNK_LOGITS_BYTES", 16 * 1000 * 4)
    monkeypatch.setattr(lm_head_losses, "MIN_LOGITS_ELEMENTS", 0)


def _problem(vocab, dtype, device="cpu", ignored=(3, 17)):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, HIDDEN, generator=g).to(device, dtype).requires_grad_()
    w = (torch.randn(vocab, HIDDEN, generator=g) / 4).to(device, dtype).requires_grad_()
    target = torch.randint(0, vocab, (ROWS,), generator=g).to(device)
    target[list(ignored)] = -100
    return x, w, target


def _gradients(loss, *tensors):
    return torch.autograd.grad(loss, tensors)


def _check_against_torch(vocab, dtype, reduction, device="cpu", ignored=(3, 17)):
    x, w, target = _problem(vocab, dtype, device, ignored)
    got = linear_cross_entropy(x, w, target, reduction=reduction)
    expected = F.cross_entropy(F.linear(x, w).float(), target, reduction=reduction)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got, expected, rtol=tolerance, atol=tolerance)
    for g, e in zip(_gradients(got * 3.0, x, w), _gradients(expected * 3.0, x, w)):
        torch.testing.assert_close(g, e, rtol=tolerance, atol=tolerance)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize(
    "vocab,dtype", [(1000, torch.float32), (1003, torch.float32), (1000, torch.bfloat16)]
)
def test_chunked_loss_and_gradients_are_torchs(vocab, dtype, reduction):
    """Three chunks (the last short), ignored rows, and a vocabulary that
    is not a multiple of 8 (padded for the GEMMs); the loss scaled after."""
    _check_against_torch(vocab, dtype, reduction)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize(
    "vocab,dtype,parts",
    [(1000, torch.bfloat16, 8), (1003, torch.float32, 4), (13, torch.float32, 8)],
    ids=["bf16", "padded", "a-part-of-padding-only"],
)
def test_row_statistics_in_parts_are_torchs(vocab, dtype, parts, monkeypatch):
    """Each row's statistics from parts of it combined: the same loss and
    gradients (the last case's last part holds only padding columns)."""
    monkeypatch.setattr(chunked, "STATISTICS_PARTS", parts)
    _check_against_torch(vocab, dtype, "mean")


class _CountedOps(TorchDispatchMode):
    """Counts the ATen ops called under it, by name."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.usefixtures("small_chunks")
def test_the_targets_index_tensors_are_made_once_a_call(monkeypatch):
    """Three chunks, rows in two parts, with gradients: the targets are
    repeated for the parts, their columns found and the row numbers made
    once for the call, not once a chunk (each is a launch on the GPU)."""
    monkeypatch.setattr(chunked, "STATISTICS_PARTS", 2)
    x, w, target = _problem(1000, torch.float32)
    # The custom op's body: under the op, a dispatch mode sees only the op.
    with torch.no_grad(), _CountedOps() as ops:
        loss, _, _ = chunked._chunked(x, w, target, -100, "mean", True, True)
    assert chunk_rows(ROWS, 1000, 4) < ROWS / 2  # three chunks
    assert ops.counts["clone"] == 1  # repeat_interleave's copy
    assert ops.counts["arange"] == 1
    assert ops.counts["eq"] == 1
    torch.testing.assert_close(loss, F.cross_entropy(F.linear(x, w), target))


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_very_negative_logits_of_a_padded_vocabulary_give_torchs_gradients(dtype):
    """Every logit -100: the padding columns' exp(0 - log_sum_exp)
    overflows float32; their g must still be 0, not inf (NaN in the
    GEMMs)."""
    x = torch.ones(ROWS, HIDDEN).to(dtype).requires_grad_()
    w = torch.full((1003, HIDDEN), -100.0 / HIDDEN).to(dtype).requires_grad_()
    target = torch.randint(0, 1003, (ROWS,), generator=torch.Generator().manual_seed(0))
    target[3] = -100
    got = _gradients(linear_cross_entropy(x, w, target), x, w)
    expected = _gradients(F.cross_entropy(F.linear(x, w).float(), target), x, w)
    for g, e in zip(got, expected):
        assert torch.isfinite(g).all()
        torch.testing.assert_close(g, e, rtol=2e-2, atol=1e-4)


def test_every_row_ignored_gives_torchs_nan():
    x, w, target = _problem(64, torch.float32, ignored=range(ROWS))
    assert torch.isnan(linear_cross_entropy(x, w, target))
    assert torch.isnan(F.cross_entropy(F.linear(x, w), target))


def test_no_gradients_under_no_grad():
    x, w, target = _problem(64, torch.float32)
    with torch.no_grad():
        loss = linear_cross_entropy(x, w, target)
    assert not loss.requires_grad
    torch.testing.assert_close(loss, F.cross_entropy(F.linear(x, w), target))


def test_frozen_weight_gets_no_gradient():
    x, w, target = _problem(64, torch.float32)
    w.requires_grad_(False)
    (grad_x,) = _gradients(linear_cross_entropy(x, w, target), x)
    (expected,) = _gradients(F.cross_entropy(F.linear(x, w), target), x)
    torch.testing.assert_close(grad_x, expected)


def test_the_gradient_is_written_over_the_logits_by_one_pointwise_kernel():
    """g takes the chunk's logits' memory: its fusion is elementwise, one
    pointwise kernel (which the runtime lets write its input in place),
    and returns nothing."""
    import re

    fd = chunked.chunk_gradient_fusion(torch.bfloat16, -100)
    logits = torch.randn(256, 4096, dtype=torch.bfloat16)
    log_sum_exp = torch.logsumexp(logits.float(), 1)
    target = torch.randint(0, 4096, (256,))
    target[:2] = -100
    expected = torch.softmax(logits.float(), 1) * 0.5
    expected[:2] = 0
    args = [logits, log_sum_exp, target, torch.tensor(0.5)]
    fd._ensure_defined()
    kernels = re.findall(r"void __launch_bounds__\(\d+\) (\w+)", fd.cuda_code_for(args))
    assert len(kernels) == 1 and kernels[0].startswith("nvfuse_pointwise"), kernels
    assert fd.execute(args) == []
    torch.testing.assert_close(logits, expected.bfloat16())


def test_chunk_rows_take_whole_gemm_tiles():
    assert chunk_rows(100, 1000, 2) == 100  # all in one chunk
    big = chunked.CHUNK_LOGITS_BYTES // (128256 * 2)
    assert chunk_rows(8192, 128256, 2) == big // 128 * 128


class _Head(torch.nn.Module):
    """transformers' causal-LM loss over a bias-free head."""

    def __init__(self, vocab=1000, bias=False):
        super().__init__()
        self.lm_head = torch.nn.Linear(HIDDEN, vocab, bias=bias)

    def forward(self, x, labels, **loss_options):
        logits = self.lm_head(x).float()
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), **loss_options)
        return loss, logits


def _rewritten(fn, *inputs):
    """The number of losses the pass rewrites in fn's Dynamo graph, and
    fn's compiled result."""
    counts = []

    def backend(gm, example_inputs):
        counts.append(lm_head_losses.chunk_lm_head_losses(gm))
        return gm.forward

    result = torch.compile(fn, backend=backend)(*inputs)
    return sum(counts), result


def _head_inputs(vocab=1000):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 20, HIDDEN, generator=g)
    labels = torch.randint(0, vocab, (2, 20), generator=g)
    labels[0, :3] = -100
    return x, labels


@pytest.mark.usefixtures("small_chunks")
def test_loss_alone_is_rewritten_and_matches():
    head = _Head()
    x, labels = _head_inputs()
    count, loss = _rewritten(lambda x, labels: head(x, labels)[0], x, labels)
    assert count == 1
    torch.testing.assert_close(loss, head(x, labels)[0])


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize(
    "case",
    [
        "logits returned",
        "bias",
        "label smoothing",
        "class weights",
        "reduction none",
    ],
)
def test_other_losses_keep_torchs_composite(case):
    head = _Head(bias=case == "bias")
    x, labels = _head_inputs()
    options = {
        "label smoothing": {"label_smoothing": 0.1},
        "class weights": {"weight": torch.rand(1000)},
        "reduction none": {"reduction": "none"},
    }.get(case, {})
    if case == "logits returned":
        fn = head
    else:

        def fn(x, labels):
            return head(x, labels, **options)[0]

    count, _ = _rewritten(fn, x, labels)
    assert count == 0


@pytest.mark.usefixtures("small_chunks")
def test_compiled_backward_scales_the_saved_gradients_in_place():
    """The backward's only work is scaling the gradients the forward saved;
    it writes them into the saved tensors (donated_buffers.py) rather than
    into fresh copies, and the gradients are torch's."""
    head = _Head()
    x, labels = _head_inputs()
    x.requires_grad_()
    loss = torch.compile(lambda x, labels: head(x, labels)[0], backend="nvfuse")(x, labels)
    loss.backward()
    (backward,) = [r for r in nvfuse.dynamo.reports() if r.kind == "backward"]
    assert str(backward).count("aten.copy_.default") == 2  # grad_x and grad_weight
    x_expected = x.detach().clone().requires_grad_()
    weight_grad = head.lm_head.weight.grad.clone()
    head.lm_head.weight.grad = None
    head(x_expected, labels)[0].backward()
    torch.testing.assert_close(x.grad, x_expected.grad)
    torch.testing.assert_close(weight_grad, head.lm_head.weight.grad)


def test_small_logits_keep_torchs_composite():
    head = _Head()
    count, _ = _rewritten(lambda x, labels: head(x, labels)[0], *_head_inputs())
    assert count == 0


def _tiny_llama():
    """The zoo's tiny transformers Llama (vocabulary 1000) and its batch."""
    pytest.importorskip("transformers")
    from workloads.model_zoo import build

    zoo = build("llama", "tiny")
    return zoo.model, zoo.batch("cpu")["input_ids"]


@pytest.mark.usefixtures("small_chunks")
def test_transformers_llama_loss_trains_as_eager():
    """The backend compiles a transformers causal LM's loss (labels given,
    the loss alone returned) with the chunked head: loss and every
    parameter's gradient as eager's; and again under no_grad."""
    model, ids = _tiny_llama()
    expected = model(input_ids=ids, labels=ids).loss
    expected.backward()
    expected_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    compiled = torch.compile(
        lambda ids, labels: model(input_ids=ids, labels=labels).loss, backend="nvfuse"
    )
    loss = compiled(ids, ids)
    loss.backward()
    torch.testing.assert_close(loss, expected)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, expected_grads[name], rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, ids), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("vocab", [32000, 50257])
def test_chunked_loss_on_gpu_is_torchs(vocab, reduction, monkeypatch):
    """bfloat16 on the GPU, several chunks, an unaligned vocabulary."""
    monkeypatch.setattr(chunked, "CHUNK_LOGITS_BYTES", 16 * vocab * 2)
    _check_against_torch(vocab, torch.bfloat16, reduction, device="cuda")


def _gpu_problem(rows, hidden, vocab):
    """bfloat16 hidden states and head weight that need gradients, and
    targets, on the GPU."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(rows, hidden, device="cuda", generator=g, dtype=torch.bfloat16)
    w = torch.randn(vocab, hidden, device="cuda", generator=g, dtype=torch.bfloat16) / 32
    target = torch.randint(0, vocab, (rows,), device="cuda", generator=g)
    return x.requires_grad_(), w.requires_grad_(), target


@pytest.mark.gpu
def test_chunked_loss_peak_memory_is_below_torchs():
    """4096 rows x 128256 words in bfloat16: torch's composite holds the
    logits, their float32 copy and their gradient; the chunked call a
    chunk's logits and g."""
    x, w, target = _gpu_problem(4096, 1024, 128256)

    def peak(loss_fn):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        loss = loss_fn()
        grads = torch.autograd.grad(loss, (x, w))
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base, loss, grads

    chunked_peak, loss, grads = peak(lambda: linear_cross_entropy(x, w, target))
    torch_peak, expected, expected_grads = peak(
        lambda: F.cross_entropy(F.linear(x, w).float(), target)
    )
    torch.testing.assert_close(loss, expected, rtol=1e-3, atol=1e-3)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-3)
    assert chunked_peak < 0.5 * torch_peak


@pytest.mark.gpu
def test_compiled_backward_allocates_no_gradient_copy():
    """The compiled backward writes the scaled weight gradient into the one
    the forward saved: it allocates well under the gradient's size (its
    copy was the backward's peak)."""
    x, w, target = _gpu_problem(4096, 1024, 32768)
    compiled = torch.compile(
        lambda x, w, target: F.cross_entropy(F.linear(x, w).float(), target), backend="nvfuse"
    )
    for _ in range(2):  # the second step runs with every kernel compiled
        x.grad = w.grad = None
        loss = compiled(x, w, target)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        loss.backward()
        torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - before < w.numel() * w.element_size() // 4
    expected = [t.detach().clone().requires_grad_() for t in (x, w)]
    F.cross_entropy(F.linear(*expected).float(), target).backward()
    torch.testing.assert_close(w.grad, expected[1].grad, rtol=2e-2, atol=2e-3)
