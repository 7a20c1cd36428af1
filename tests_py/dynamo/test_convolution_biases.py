"""Convolution biases added, and their gradients summed, by regions
(passes/convolution_biases.py): a ConvNeXt block's depthwise convolution
loses its bias to the layer norm's region and its backward's bias
gradient becomes a sum of the output's gradient; a convolution no region
reads keeps its bias. Checked on the CPU: the rewritten graphs run by ATen
alone against eager, forward and backward, then the whole backend."""

import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.convolution_biases import move_convolution_biases_into_regions

from .conftest import compiled_with_passes

aten = torch.ops.aten


class DepthwiseThenNorm(torch.nn.Module):
    """ConvNeXt's block head: a depthwise 7x7 convolution with a bias,
    then the layer norm over channels (channels-last)."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = torch.nn.LayerNorm(channels)

    def forward(self, x):
        return self.norm(self.conv(x).permute(0, 2, 3, 1))


class ConvIntoConv(torch.nn.Module):
    """A convolution whose only reader is another convolution."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.second = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)

    def forward(self, x):
        return self.second(self.first(x))


def _with_the_pass_only(model, seen):
    return compiled_with_passes(model, seen, move_convolution_biases_into_regions)


def _calls(gm, target):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target == target]


def _pair(cls):
    torch.manual_seed(0)
    model, reference = cls().double(), cls().double()
    reference.load_state_dict(model.state_dict())
    return model, reference


def _step(model, x):
    out = model(x)
    weights = (torch.arange(out.numel()) % 7).to(out.dtype).view(out.shape)
    (out * weights).sum().backward()
    return out


def _check_against_eager(compiled, model, reference, x):
    torch.testing.assert_close(_step(compiled, x), _step(reference, x))
    for (name, got), want in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, msg=name)


def test_the_depthwise_bias_moves_to_its_readers_forward_and_backward():
    model, reference = _pair(DepthwiseThenNorm)
    seen = []
    x = torch.randn(2, 8, 9, 9, dtype=torch.double)
    _check_against_eager(_with_the_pass_only(model, seen), model, reference, x)
    forward, backward = seen
    (conv,) = _calls(forward, aten.convolution.default)
    assert conv.args[2] is None
    # The bias is added after the permute to channels-last order (a
    # region cuts its fusion at a permute of a value it computes), and the
    # training forward saves the sum, permuted back.
    (add,) = _calls(forward, aten.add.Tensor)
    assert add.args[0].target == aten.permute.default and add.args[0].args[0] is conv
    assert list(add.args[1].meta["val"].shape) == [1, 1, 1, 8]
    (conv_backward,) = _calls(backward, aten.convolution_backward.default)
    assert list(conv_backward.args[10]) == [False, True, False]  # no input gradient asked
    assert _calls(backward, aten.sum.dim_IntList)


class DepthwiseNormAndResult(DepthwiseThenNorm):
    """The block head returning the convolution's result too, as a
    training forward returns a result it saves for the backward."""

    def forward(self, x):
        y = self.conv(x)
        return self.norm(y.permute(0, 2, 3, 1)), y


def test_a_returned_result_is_the_sum_permuted_back():
    torch.manual_seed(0)
    model = DepthwiseNormAndResult().double()
    x = torch.randn(2, 8, 9, 9, dtype=torch.double).to(memory_format=torch.channels_last)
    seen = []
    with torch.no_grad():
        got = _with_the_pass_only(model, seen)(x)
        want = model(x)
    (gm,) = seen
    assert _calls(gm, aten.convolution.default)[0].args[2] is None
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    returned = output.args[0][1]
    assert returned.target == aten.permute.default and returned.args[0].target == aten.add.Tensor
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()


def test_a_convolution_only_another_convolution_reads_keeps_its_bias():
    model, reference = _pair(ConvIntoConv)
    seen = []
    x = torch.randn(2, 4, 6, 6, dtype=torch.double)
    _check_against_eager(_with_the_pass_only(model, seen), model, reference, x)
    first = _calls(seen[0], aten.convolution.default)[0]
    assert first.args[2] is not None


def test_the_whole_backend_matches_eager_on_a_channels_last_image(monkeypatch):
    from nvfuse.dynamo import pipeline

    rewrites = []
    real = pipeline.move_convolution_biases_into_regions
    monkeypatch.setattr(
        pipeline, "move_convolution_biases_into_regions", lambda gm: rewrites.append(real(gm))
    )
    torch.manual_seed(0)
    model = DepthwiseThenNorm(16)
    x = torch.randn(4, 16, 12, 12).to(memory_format=torch.channels_last)
    compiled = torch.compile(model, backend="nvfuse")
    got = compiled(x)
    got.float().square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = model(x)
    want.float().square().sum().backward()
    torch.testing.assert_close(got, want)
    for got_grad, p in zip(grads, model.parameters()):
        torch.testing.assert_close(got_grad, p.grad, rtol=1e-4, atol=1e-4)
    assert rewrites == [True, True]  # the backend's pipeline ran it, forward and backward
