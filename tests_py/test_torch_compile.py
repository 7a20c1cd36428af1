"""torch.compile(model, backend="nvfuse"): forward and backward against
eager on model blocks, with the fusions checked to be there; dynamic
shapes, an op nvfuse lacks in the middle, in-place ops and views,
fullgraph, autocast, dropout, options. On the CPU (nvfuse's reference
path) and, marked, on the GPU."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo
from nvfuse.errors import DefinitionError
from workloads.model_blocks import GPT2Block, LlamaBlock, LMHeadLoss, MLP

CUDA = torch.cuda.is_available()
DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not CUDA, reason="needs CUDA")]
    ),
]


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _tolerances(dtype):
    return {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.bfloat16: dict(rtol=3e-2, atol=3e-2)}[
        dtype
    ]


def _train_step_matches_eager(model, inputs, dtype=torch.float32, **compile_kwargs):
    """Two training steps (forward, backward, SGD update) of `model` compiled
    and of a copy in eager, compared on outputs and every gradient."""
    import copy

    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="nvfuse", **compile_kwargs)
    tol = _tolerances(dtype)
    for _ in range(2):
        want, got = eager(*inputs), compiled(*inputs)
        torch.testing.assert_close(got, want, **tol)
        want.float().square().mean().backward()
        got.float().square().mean().backward()
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, **tol, msg=lambda m: f"{name}: {m}")
        with torch.no_grad():
            for p, q in zip(model.parameters(), eager.parameters()):
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
                p.grad = q.grad = None


def _fusions(kind):
    return [f for r in nvfuse.dynamo.reports() if r.kind == kind for f in r.fusions]


def test_the_backend_is_registered_by_name():
    assert "nvfuse" in torch._dynamo.list_backends()


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_trains_as_eager(device):
    torch.manual_seed(0)
    _train_step_matches_eager(MLP().to(device), [torch.randn(4, 8, 64, device=device)])
    assert _fusions("forward") and _fusions("backward")


@pytest.mark.parametrize("device", DEVICES)
def test_gpt2_block_trains_as_eager(device):
    torch.manual_seed(0)
    _train_step_matches_eager(GPT2Block().to(device), [torch.randn(2, 16, 64, device=device)])
    forward_ops = {op for _, ops in _fusions("forward") for op in ops}
    assert "aten.var_mean.correction" in forward_ops  # the layer norms fused


@pytest.mark.parametrize("device", DEVICES)
def test_llama_block_trains_as_eager(device):
    torch.manual_seed(0)
    _train_step_matches_eager(LlamaBlock().to(device), [torch.randn(2, 16, 64, device=device)])
    forward_ops = {op for _, ops in _fusions("forward") for op in ops}
    assert "aten.rsqrt.default" in forward_ops and "aten.cat.default" in forward_ops


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_llama_block_trains_as_eager_in_bf16():
    torch.manual_seed(0)
    block = LlamaBlock().to("cuda", torch.bfloat16)
    _train_step_matches_eager(
        block, [torch.randn(2, 16, 64, device="cuda", dtype=torch.bfloat16)], dtype=torch.bfloat16
    )


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_head_matches_eager(device):
    torch.manual_seed(0)
    head = LMHeadLoss().to(device)
    x = torch.randn(2, 16, 64, device=device, requires_grad=True)
    targets = torch.randint(0, 512, (2, 16), device=device)
    compiled = torch.compile(head, backend="nvfuse")
    want, got = head(x, targets), compiled(x, targets)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    (want_grad,) = torch.autograd.grad(want, x)
    (got_grad,) = torch.autograd.grad(got, x)
    torch.testing.assert_close(got_grad, want_grad, rtol=1e-4, atol=1e-6)
    backward_ops = {op for _, ops in _fusions("backward") for op in ops}
    assert "aten.exp.default" in backward_ops  # the softmax of the loss's backward


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_and_layer_norm_inference(device):
    def heads(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b).softmax(-1)

    x = torch.randn(32, 100, device=device)
    w, b = torch.randn(100, device=device), torch.randn(100, device=device)
    with torch.no_grad():
        got = torch.compile(heads, backend="nvfuse")(x, w, b)
    torch.testing.assert_close(got, heads(x, w, b), rtol=1e-5, atol=1e-6)
    assert [r.kind for r in nvfuse.dynamo.reports()] == ["inference"]
    assert len(_fusions("inference")) == 1  # one fusion for both


@pytest.mark.parametrize("device", DEVICES)
def test_new_batch_and_sequence_sizes_do_not_recompile(device):
    torch.manual_seed(0)
    block = MLP().to(device)
    compiled = torch.compile(block, backend="nvfuse", dynamic=True)
    with torch.no_grad():
        for batch, seq in [(2, 8), (3, 5), (4, 17)]:  # (Dynamo specializes size 1)
            x = torch.randn(batch, seq, 64, device=device)
            torch.testing.assert_close(compiled(x), block(x), rtol=1e-4, atol=1e-4)
    assert len(nvfuse.dynamo.reports()) == 1  # one graph served every size


@pytest.mark.parametrize("device", DEVICES)
def test_an_op_nvfuse_lacks_splits_the_graph_around_it(device):
    def f(x):
        y = (x * 2 + 1).relu()
        z = torch.cummax(y, dim=-1).values  # nvfuse has no cummax: stays ATen
        return (z.sin() * 3).sum(-1)

    x = torch.randn(8, 32, device=device)
    with torch.no_grad():
        got = torch.compile(f, backend="nvfuse")(x)
    torch.testing.assert_close(got, f(x), rtol=1e-5, atol=1e-5)
    (report,) = nvfuse.dynamo.reports()
    assert len(report.fusions) == 2
    assert any(target == "aten.cummax.default" for _, target, _ in report.unfused)


@pytest.mark.parametrize("device", DEVICES)
def test_in_place_ops_and_views(device):
    def f(x, y):
        x = x.clone()
        x.mul_(2).add_(1)
        v = x.view(-1, 4)
        v.sub_(y)
        return x.transpose(0, 1).exp(), v.sum(0)

    x = torch.randn(8, 4, device=device)
    y = torch.randn(4, device=device)
    got = torch.compile(f, backend="nvfuse", fullgraph=True)(x, y)
    for g, w in zip(got, f(x, y)):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_mutating_an_input_in_place(device):
    def f(x):
        x.mul_(3).add_(2)
        return x.sin()

    x = torch.randn(16, device=device)
    expected_x = x.clone()
    want = f(expected_x)
    got = torch.compile(f, backend="nvfuse")(x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, expected_x)


def test_autocast_bf16_on_the_cpu():
    torch.manual_seed(0)
    block = MLP()
    x = torch.randn(4, 8, 64)
    compiled = torch.compile(block, backend="nvfuse")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want, got = block(x), compiled(x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.float(), want.float(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_keeps_torch_statistics_and_seed(device):
    def f(x):
        return F.dropout(x * 2, p=0.25, training=True)

    x = torch.ones(256, 256, device=device)
    compiled = torch.compile(f, backend="nvfuse")
    torch.manual_seed(5)
    first = compiled(x)
    torch.manual_seed(5)
    again = compiled(x)
    assert torch.equal(first, again)  # torch.manual_seed reproduces it
    kept = first != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.02
    torch.testing.assert_close(first[kept], torch.full_like(first[kept], 2 / 0.75))


def test_options_are_checked():
    # Dynamo calls the backend at the first call and wraps what it raises.
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="unknown option") as raised:
        torch.compile(lambda x: x * 2 + 1, backend="nvfuse", options={"cuda_graph_trees": True})(
            torch.randn(4)
        )
    assert isinstance(raised.value.inner_exception, DefinitionError)
    assert "cuda_graph_trees" in str(raised.value.inner_exception)


def test_dump_prints_each_graph(capfd):
    torch.compile(lambda x: (x * 2 + 1).exp(), backend="nvfuse", options={"dump": True})(
        torch.randn(4)
    )
    err = capfd.readouterr().err
    assert "nvfuse inference graph: 1 fusions" in err and "aten.exp.default" in err


def test_dtype_copies_with_a_memory_format_fuse():
    def f(x):
        wide = torch.ops.aten._to_copy.default(
            x, dtype=torch.float32, memory_format=torch.contiguous_format
        )
        return (wide * 2).exp().sum(-1)

    x = torch.randn(8, 16, dtype=torch.bfloat16)
    with torch.no_grad():
        got = torch.compile(f, backend="nvfuse")(x)
    torch.testing.assert_close(got, f(x))
    (report,) = nvfuse.dynamo.reports()
    assert not report.unfused and len(report.fusions) == 1


def test_unknown_modes_are_named():
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="unknown mode 'fastest'"):
        torch.compile(lambda x: x * 2 + 1, backend="nvfuse", mode="fastest")(torch.randn(4))


def _cudagraph_skips():
    from torch._dynamo.utils import counters

    return counters["inductor"]["cudagraph_skips"]


def test_cuda_graphs_on_the_cpu_run_without_graphs():
    # torch records no CUDA graph of CPU tensors: the graph runs as without
    # the option, and torch counts the skip.
    torch.manual_seed(0)
    before = _cudagraph_skips()
    _train_step_matches_eager(MLP(), [torch.randn(4, 8, 64)], mode="reduce-overhead")
    assert _cudagraph_skips() > before


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("how", [dict(mode="reduce-overhead"), dict(options={"cuda_graphs": True})])
def test_cuda_graphs_replay_training_steps(how):
    torch.manual_seed(0)
    before = _cudagraph_skips()
    block = GPT2Block().cuda()
    x = torch.randn(2, 16, 64, device="cuda")
    _train_step_matches_eager(block, [x], **how)
    assert _cudagraph_skips() == before
    manager = torch._inductor.cudagraph_trees.get_manager(
        torch.cuda.current_device(), create_if_none_exists=False
    )
    assert manager is not None and any(manager.roots.values())  # graphs were recorded
    assert len(_fusions("forward")) > 0 and len(_fusions("backward")) > 0


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_cuda_graphs_replay_inference_with_new_inputs():
    torch.manual_seed(0)
    block = LlamaBlock().cuda().eval()
    compiled = torch.compile(block, backend="nvfuse", mode="reduce-overhead")
    with torch.no_grad():
        for step in range(4):  # warm-up, record, then replays
            x = torch.randn(2, 16, 64, device="cuda")
            got = compiled(x).clone()
            torch.testing.assert_close(got, block(x), rtol=1e-4, atol=1e-4)
