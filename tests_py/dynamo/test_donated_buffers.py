"""A backward's elementwise op writes its result into the saved activation
AOTAutograd donated to it (passes/donated_buffers.py), where that write
replaces a fresh output; nothing else changes."""

import pytest
import torch

import nvfuse.dynamo
from nvfuse.dynamo.passes.donated_buffers import write_into_donated_buffers

from .conftest import aten_graph, fused_regions


def _writes(gm):
    return [n for n in gm.graph.nodes if n.target is torch.ops.aten.copy_.default]


def _scaled(saved, scale):
    return saved * scale


def test_an_elementwise_reader_writes_its_donated_input():
    saved, scale = torch.randn(6, 5), torch.tensor(3.0)
    gm = aten_graph(_scaled, saved, scale)
    assert write_into_donated_buffers(gm, [0]) == 1
    fused, regions = fused_regions(gm)
    assert len(regions) == 1 and len(_writes(gm)) == 0  # the write is in the region
    expected = saved * scale
    out = fused(saved, scale)
    assert out.data_ptr() == saved.data_ptr()
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize(
    "fn,shape",
    [
        pytest.param(lambda saved, scale: (saved * scale, saved + 1), (6, 5), id="read-twice"),
        pytest.param(lambda saved, scale: saved.sum(0) * scale, (6, 5), id="a-reduction-reads-it"),
        pytest.param(lambda saved, scale: saved.double() * scale, (6, 5), id="other-dtype"),
        pytest.param(
            lambda saved, scale: saved.to(memory_format=torch.channels_last) * scale,
            (2, 3, 4, 5),
            id="other-strides",
        ),
    ],
)
def test_other_readers_keep_a_fresh_result(fn, shape):
    gm = aten_graph(fn, torch.randn(shape), torch.tensor(3.0))
    assert write_into_donated_buffers(gm, [0]) == 0


def test_an_input_not_donated_is_not_written():
    gm = aten_graph(_scaled, torch.randn(6, 5), torch.tensor(3.0))
    assert write_into_donated_buffers(gm, []) == 0


def _scaled_then_exp(saved, scale):
    return ((saved * scale).exp() + 1,)


def _scaled_and_summed(saved, scale):
    scaled = saved * scale
    return scaled, scaled.sum()


def _scaled_and_shifted(saved, scale):
    scaled = saved * scale
    return scaled, scaled + torch.arange(5.0)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_scaled_then_exp, id="kept-in-registers"),
        pytest.param(_scaled_and_summed, id="reduction"),
        pytest.param(_scaled_and_shifted, id="coordinates"),
    ],
)
def test_a_write_that_would_not_save_a_fresh_output_is_undone(fn):
    """The scaled value feeds only the region's own exp (writing it would
    be one more pass over the buffer), or its region runs a reduction's or
    a coordinate kernel (which would write it fresh and copy it into the
    buffer): the region computes it as before."""
    saved, scale = torch.randn(6, 5), torch.tensor(3.0)
    gm = aten_graph(fn, saved, scale)
    assert write_into_donated_buffers(gm, [0]) == 1
    fused, regions = fused_regions(gm)
    assert not any("copy_" in target for r in regions for target in r.node_targets())
    expected = fn(saved, scale)
    got = fused(saved, scale)
    torch.testing.assert_close(tuple(got), expected)
    assert got[0].data_ptr() != saved.data_ptr()


class _GradientInForward(torch.autograd.Function):
    """Computes its input's gradient in the forward and scales it in the
    backward, as the chunked LM-head loss does: the saved gradient is a
    donated buffer whose only reader, the scaling, gives a gradient."""

    @staticmethod
    def forward(ctx, x, w):
        gradient = x @ w
        ctx.save_for_backward(gradient)
        return (x * gradient.detach()).sum()

    @staticmethod
    def backward(ctx, grad_loss):
        (gradient,) = ctx.saved_tensors
        return gradient * grad_loss, None


def _loss(x, w):
    return _GradientInForward.apply(x, w) * 3


def _compiled_gradients(retain_graph=False):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 8, generator=g, requires_grad=True)
    w = torch.randn(8, 8, generator=g)
    loss = torch.compile(_loss, backend="nvfuse")(x, w)
    loss.backward(retain_graph=retain_graph)
    return x, w, loss


def _backward_writes():
    (report,) = [r for r in nvfuse.dynamo.reports() if r.kind == "backward"]
    return str(report).count("aten.copy_.default")


def test_a_training_step_writes_a_donated_buffer_and_keeps_torchs_gradients():
    x, w, _ = _compiled_gradients()
    assert _backward_writes() == 1
    expected = x.detach().clone().requires_grad_()
    _loss(expected, w).backward()
    torch.testing.assert_close(x.grad, expected.grad)


def test_a_first_backward_that_retains_the_graph_writes_nothing():
    """AOTAutograd donates nothing to a backward first run with
    retain_graph=True, so the second backward reads the saved values
    unchanged."""
    x, w, loss = _compiled_gradients(retain_graph=True)
    assert _backward_writes() == 0
    first = x.grad.clone()
    x.grad = None
    loss.backward()
    torch.testing.assert_close(x.grad, first)


def test_an_undone_write_is_not_reported_as_an_aten_call(monkeypatch):
    """The partitioner erases a write it undoes: the graph's report lists
    no copy_ left to ATen."""
    from nvfuse.dynamo import pipeline

    writes = []

    def counted(gm, donated):
        writes.append(write_into_donated_buffers(gm, donated))
        return writes[-1]

    monkeypatch.setattr(pipeline, "write_into_donated_buffers", counted)

    def fn(x, w):
        return (torch.tanh(x @ w) + 1).square().sum()

    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 8, generator=g, requires_grad=True)
    w = torch.randn(8, 4, generator=g, requires_grad=True)
    torch.compile(fn, backend="nvfuse")(x, w).backward()
    assert writes == [1]  # written, then undone: tanh's result stays in registers
    (report,) = [r for r in nvfuse.dynamo.reports() if r.kind == "backward"]
    assert "copy_" not in str(report), report
