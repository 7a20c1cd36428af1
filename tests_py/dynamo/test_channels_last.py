"""Convolutions on channels-last operands (passes/channels_last.py, the
backend's `channels_last` option): the graphs AOTAutograd gives the
backend are rewritten so that every convolution, forward and backward,
reads channels-last tensors, the saved activations reach the backward in
that layout, and what the user sees keeps its layout. Checked on the CPU:
the rewritten graphs run by ATen alone, then the whole backend."""

import pytest
import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.channels_last import run_convolutions_channels_last


class ConvBlock(torch.nn.Module):
    """A residual conv/batch-norm/ReLU block, with a head and the feature
    map itself as outputs."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + y)
        return self.head(y.mean((2, 3))), y


def _pair():
    torch.manual_seed(0)
    model, reference = ConvBlock(), ConvBlock()
    reference.load_state_dict(model.state_dict())
    return model, reference


def _convolution_operands(gm):
    """The meta values of the 4-d activations gm's convolutions read (the
    image, and in the backward the gradient too; not the weights)."""
    metas = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and "convolution" in str(node.target):
            activations = node.args[:2] if "backward" in str(node.target) else node.args[:1]
            metas += [
                a.meta["val"]
                for a in activations
                if isinstance(a, torch.fx.Node) and a.meta["val"].dim() == 4
            ]
    return metas


def _weights_of_convolutions(gm):
    """The meta values of the weights gm's convolutions read."""
    return [
        node.args[2 if "backward" in str(node.target) else 1].meta["val"]
        for node in gm.graph.nodes
        if node.op == "call_function" and "convolution" in str(node.target)
    ]


def _compiled_with_the_pass_only(model, seen, when=True):
    """`model` through AOTAutograd with compilers that apply the pass and
    run the rewritten graphs as they are (ATen): the pass alone decides
    the results. Records (kind, graph, example inputs) in `seen`."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def compiler(kind):
        def compile_graph(gm, example_inputs):
            run_convolutions_channels_last(gm, example_inputs, kind, when)
            seen.append((kind, gm, list(example_inputs)))
            return make_boxed_func(gm.forward)

        return compile_graph

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        keep_inference_input_mutations=True,
    )
    return torch.compile(model, backend=backend)


def _train_step(model, x):
    out, feature = model(x)
    (out.square().sum() + feature.sum()).backward()
    return out, feature


def test_every_convolution_reads_channels_last_operands_forward_and_backward():
    model, reference = _pair()
    seen = []
    x = torch.randn(2, 3, 6, 6)
    out, feature = _train_step(_compiled_with_the_pass_only(model, seen), x)
    want, want_feature = _train_step(reference, x)
    kinds = [kind for kind, _, _ in seen]
    assert kinds == ["forward", "backward"], kinds
    for kind, gm, _ in seen:
        operands = _convolution_operands(gm)
        assert operands, kind
        assert all(m.is_contiguous(memory_format=torch.channels_last) for m in operands), kind
    # The backward got the saved activations as the forward made them.
    _, backward, inputs = seen[1]
    assert any(
        isinstance(v, torch.Tensor)
        and v.dim() == 4
        and v.shape[1] > 1
        and v.is_contiguous(memory_format=torch.channels_last)
        and not v.is_contiguous()
        for v in inputs
    )
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(feature, want_feature)
    assert feature.stride() == want_feature.stride()  # the user's layout kept
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(model.bn1.running_var, reference.bn1.running_var)


def test_only_what_is_not_channels_last_yet_is_copied():
    # The image is copied; the block's activations come out of a
    # channels-last convolution, and copying them again (as the meta values
    # before propagation would have it) would write each twice. Weights
    # keep their layout: the convolution converts them inside its call.
    model, _ = _pair()
    seen = []
    _train_step(_compiled_with_the_pass_only(model, seen), torch.randn(2, 3, 6, 6))
    for kind, gm, _ in seen:
        copies = [
            n
            for n in gm.graph.nodes
            if n.target is torch.ops.aten.clone.default
            and n.kwargs.get("memory_format") is torch.channels_last
        ]
        assert copies, kind
        for copy in copies:
            source = copy.args[0].meta["val"]
            assert not source.is_contiguous(memory_format=torch.channels_last), (kind, copy)
    forward_copies = [
        n.args[0].op
        for n in seen[0][1].graph.nodes
        if n.target is torch.ops.aten.clone.default
        and n.kwargs.get("memory_format") is torch.channels_last
    ]
    assert forward_copies == ["placeholder"]  # the image
    for _, gm, _ in seen:
        assert all(w.is_contiguous() for w in _weights_of_convolutions(gm))


def test_a_graph_without_convolutions_is_left_as_it_is():
    seen = []
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    compiled = _compiled_with_the_pass_only(mlp, seen)
    compiled(torch.randn(3, 4)).sum().backward()
    for _, gm, _ in seen:
        assert "clone" not in str(gm.graph)


@pytest.mark.parametrize("training", [True, False])
def test_the_backend_with_channels_last_matches_eager(training):
    model, reference = _pair()
    model.train(training)
    reference.train(training)
    compiled = torch.compile(model, backend="nvfuse", options={"channels_last": True})
    x = torch.randn(2, 3, 6, 6)
    if training:
        out, feature = _train_step(compiled, x)
        want, want_feature = _train_step(reference, x)
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
    else:
        with torch.no_grad():
            out, feature = compiled(x)
            want, want_feature = reference(x)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(feature, want_feature)
    assert feature.stride() == want_feature.stride()


def test_channels_last_is_a_known_backend_option():
    from nvfuse.dynamo.backend import OPTIONS

    assert "channels_last" in OPTIONS


def _convolution_graph(image, weight, transposed=False, groups=1, dtype=torch.bfloat16):
    """An ATen graph of one convolution over fake CUDA tensors (no GPU
    needed): what channels_last_pays reads."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    with FakeTensorMode():
        x = torch.empty(image, device="cuda", dtype=dtype)
        w = torch.empty(weight, device="cuda", dtype=dtype)

    def convolve(x, w):
        return torch.ops.aten.convolution.default(
            x, w, None, [1, 1], [1, 1], [1, 1], transposed, [0, 0], groups
        )

    return make_fx(convolve, tracing_mode="fake")(x, w)


@pytest.mark.parametrize(
    "case,pays",
    [
        ({"image": (2, 8, 6, 6), "weight": (16, 8, 3, 3)}, True),  # ResNet's kind
        ({"image": (2, 64, 6, 6), "weight": (16, 64, 1, 1)}, True),  # 1x1 narrowing
        ({"image": (2, 64, 6, 6), "weight": (16, 64, 3, 3)}, False),  # 3x3 narrowing
        ({"image": (2, 8, 6, 6), "weight": (8, 1, 7, 7), "groups": 8}, False),  # depthwise
        ({"image": (2, 8, 6, 6), "weight": (8, 8, 3, 3), "dtype": torch.float32}, False),
    ],
    ids=["ungrouped", "narrowing-1x1", "narrowing-3x3", "depthwise", "float32"],
)
def test_auto_turns_channels_last_on_for_ungrouped_half_convolutions(case, pays):
    from nvfuse.dynamo.passes.channels_last import channels_last_pays

    assert channels_last_pays(_convolution_graph(**case)) == pays


def test_auto_leaves_cpu_convolutions_as_they_are():
    """The CPU reference path gains nothing from cuDNN's layout: "auto"
    (the default) keeps the graphs as traced there."""
    seen = []
    model, _ = _pair()
    compiled = _compiled_with_the_pass_only(model, seen, when="auto")
    out, _ = compiled(torch.randn(2, 3, 6, 6))
    out.sum().backward()
    assert seen and all("clone" not in str(gm.graph) for _, gm, _ in seen)


@pytest.mark.parametrize("value", ["yes", 2, None])
def test_a_bad_channels_last_value_is_a_typed_error(value):
    from nvfuse.errors import DefinitionError

    model, _ = _pair()
    compiled = torch.compile(model, backend="nvfuse", options={"channels_last": value})
    # Dynamo calls the backend at the first call and wraps what it raises.
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="channels_last") as raised:
        compiled(torch.randn(2, 3, 6, 6))
    assert isinstance(raised.value.inner_exception, DefinitionError)


def _largest(t):
    return t.float().abs().max().item()


def _assert_near(got, want, tolerance=2e-2):
    """bf16 against bf16 computed in another order: the largest difference
    against the largest magnitude (a gradient element summing terms that
    cancel can be far off relative to itself)."""
    scale = want.float().abs().max().item()
    error = (got.float() - want.float()).abs().max().item()
    assert error <= tolerance * scale + 1e-3, (error, scale)


@pytest.mark.gpu
def test_auto_runs_a_bf16_cuda_block_channels_last_and_matches_eager():
    """The default ("auto") on a CUDA bf16 ResNet-style block: every
    convolution of the forward and the backward reads channels-last
    operands, results and gradients match eager's, and the feature map the
    user sees keeps eager's layout."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    model, reference = _pair()
    model, reference = model.cuda().bfloat16(), reference.cuda().bfloat16()
    seen = []
    compiled = _compiled_with_the_pass_only(model, seen, when="auto")
    x = torch.randn(4, 3, 16, 16, device="cuda", dtype=torch.bfloat16)
    out, feature = _train_step(compiled, x)
    want, want_feature = _train_step(reference, x)
    assert [kind for kind, _, _ in seen] == ["forward", "backward"]
    for kind, gm, _ in seen:
        operands = _convolution_operands(gm)
        assert operands, kind
        assert all(m.is_contiguous(memory_format=torch.channels_last) for m in operands), kind
    _assert_near(out, want)
    _assert_near(feature, want_feature)
    assert feature.stride() == want_feature.stride()
    pairs = zip(model.named_parameters(), reference.parameters())
    grads = {name: (p.grad, q.grad) for (name, p), q in pairs}
    # bn2 subtracts the batch mean of what conv2's bias adds: that bias's
    # gradient is zero but for rounding, which differs with the order of
    # the sums (in bf16, as large as the rounded terms); it is checked
    # against the gradients of the weights it sits between.
    bias, want_bias = grads.pop("conv2.bias")
    assert _largest(bias.float() - want_bias.float()) <= 2e-2 * _largest(grads["conv2.weight"][1])
    for got, want_grad in grads.values():
        _assert_near(got, want_grad)
    with torch.no_grad():
        backend_out, backend_feature = torch.compile(reference, backend="nvfuse")(x)
        want, want_feature = reference(x)
    _assert_near(backend_out, want)
    assert backend_feature.stride() == want_feature.stride()
