"""Convolution weights made channels-last by one grouped copy
(passes/weight_layouts.py, runtime/layout_copies.cpp): the rewrite on fake
CUDA graphs (no GPU needed), the backward's weight gradients copied back
into their weights' layout, the graphs it leaves alone, the copy's values
and typed errors on the CPU, its kernel through NVRTC, and on a GPU the
grouped kernel's bits against ATen's copy for every element size, many
tensors and odd layouts, and a compiled channels-last network against
eager with one grouped launch for its weights."""

import operator
import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import nvfuse
import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse import _C
from nvfuse.dynamo.passes.weight_layouts import copy_into_layouts, group_weight_layouts

aten = torch.ops.aten
CL = torch.channels_last


def _conv(x, w, padding=1):
    return aten.convolution.default(x, w, None, [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1)


def _fake_cuda_graph(fn, image_layout=CL, weights=((8, 8, 3, 3), (8, 8, 3, 3))):
    """fn(image, *weights) traced on fake CUDA tensors (no GPU)."""
    with FakeTensorMode():
        x = torch.empty(2, 8, 6, 6, device="cuda", dtype=torch.bfloat16)
        x = x.contiguous(memory_format=image_layout)
        ws = [torch.empty(s, device="cuda", dtype=torch.bfloat16) for s in weights]
    return make_fx(fn, tracing_mode="fake")(x, *ws)


def _groups(gm):
    return [n for n in gm.graph.nodes if n.target is copy_into_layouts]


def test_every_nchw_weight_of_a_channels_last_graph_is_copied_by_one_call():
    gm = _fake_cuda_graph(lambda x, w1, w2: _conv(x, w1) + _conv(x, w2))
    assert group_weight_layouts(gm)
    (group,) = _groups(gm)
    weights, strides = group.args
    assert [w.op for w in weights] == ["placeholder", "placeholder"]
    assert strides == [[72, 1, 24, 8]] * 2
    for conv in (n for n in gm.graph.nodes if n.target is aten.convolution.default):
        weight = conv.args[1]
        assert weight.target is operator.getitem and weight.args[0] is group
        assert weight.meta["val"].is_contiguous(memory_format=CL)


def test_the_backwards_weights_are_grouped_too():
    def backward(x, w1, w2):
        g = torch.ones_like(x)
        a = aten.convolution_backward.default(
            g, x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]
        )
        b = aten.convolution_backward.default(
            g, x, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]
        )
        return a[0] + b[0], a[1], b[1]

    gm = _fake_cuda_graph(backward)
    assert group_weight_layouts(gm)
    assert len(_groups(gm)) == 1
    for node in gm.graph.nodes:
        if node.target is aten.convolution_backward.default:
            assert node.args[2].target is operator.getitem


def test_the_backwards_channels_last_weight_gradients_are_returned_as_their_weights():
    """Traced on real CPU tensors, whose convolution_backward returns
    channels-last weight gradients (the fake CUDA kernels do not)."""

    def backward(x, w1, w2):
        g = torch.ones_like(x)
        grads = [
            aten.convolution_backward.default(
                g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]
            )
            for w in (w1, w2)
        ]
        return grads[0][0] + grads[1][0], grads[0][1], grads[1][1]

    x = torch.randn(2, 8, 6, 6).contiguous(memory_format=CL)
    w1, w2 = torch.randn(8, 8, 3, 3), torch.randn(8, 8, 3, 3)
    gm = make_fx(backward)(x, w1, w2)
    assert group_weight_layouts(gm)
    weights, gradients = _groups(gm)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    assert [v.args[0] for v in output.args[0][1:]] == [gradients, gradients]
    assert gradients.args[1] == [[72, 9, 3, 1]] * 2
    got, want = gm(x, w1, w2), backward(x, w1, w2)
    assert [t.stride() for t in got[1:]] == [w1.stride()] * 2
    for g, w in zip(got, want):
        assert torch.equal(g, w)


def test_graphs_without_two_such_weights_stay():
    one = _fake_cuda_graph(lambda x, w1: _conv(x, w1), weights=((8, 8, 3, 3),))
    assert not group_weight_layouts(one)
    # 1x1 weights are channels-last already.
    pointwise = _fake_cuda_graph(
        lambda x, w1, w2: _conv(x, w1, 0) + _conv(x, w2, 0), weights=((8, 8, 1, 1),) * 2
    )
    assert not group_weight_layouts(pointwise)
    # An NCHW image: cuDNN runs NCHW, the weights are read as they are.
    nchw = _fake_cuda_graph(
        lambda x, w1, w2: _conv(x, w1) + _conv(x, w2), image_layout=torch.contiguous_format
    )
    assert not group_weight_layouts(nchw)
    # A weight computed in the graph is not an input the call could take first.
    computed = _fake_cuda_graph(lambda x, w1, w2: _conv(x, w1 * 2) + _conv(x, w2 * 2))
    assert not group_weight_layouts(computed)


def test_the_copies_hold_the_values_in_the_asked_layout_on_the_cpu():
    a = torch.randn(4, 3, 3, 3)
    b = torch.randn(5, 2, 7).permute(2, 0, 1)  # a non-contiguous source
    c = torch.randn(0, 3)
    copies = copy_into_layouts([a, b, c], [[27, 1, 9, 3], [1, 14, 7], [1, 0]])
    assert copies[0].stride() == (27, 1, 9, 3) and torch.equal(copies[0], a)
    assert copies[1].stride() == (1, 14, 7) and torch.equal(copies[1], b)
    assert copies[2].shape == (0, 3)
    assert copies[0].data_ptr() != a.data_ptr()


def test_bad_layouts_get_typed_errors_naming_the_tensor():
    a = torch.randn(4, 3, 3, 3)
    with pytest.raises(nvfuse.InputError, match="tensor 0 has 4 axes but 3 strides"):
        _C.copy_into_layouts([a], [[27, 9, 3]])
    with pytest.raises(nvfuse.InputError, match="tensor 1 do not lay out its sizes"):
        _C.copy_into_layouts([a, a], [[27, 1, 9, 3], [27, 1, 9, 1]])
    with pytest.raises(nvfuse.InputError, match="2 stride lists"):
        _C.copy_into_layouts([a], [[27, 1, 9, 3], [27, 1, 9, 3]])
    with pytest.raises(nvfuse.InputTypeError, match="item 0 of tensors: expected a torch.Tensor"):
        _C.copy_into_layouts([3.0], [[1]])
    with pytest.raises(nvfuse.InputError, match="tensor 0 do not lay out"):
        _C.copy_into_layouts([torch.randn(2, 3)], [[-3, 1]])
    with pytest.raises(nvfuse.InputError, match="element_size: expected 1, 2, 4 or 8"):
        _C.layout_copies_source(3)
    assert isinstance(nvfuse.InputError("x"), RuntimeError)


# ptxas's report of an entry: its stack frame, spill stores and registers.
PTXAS_ENTRY = re.compile(
    r"Compiling entry function '(\w+)'.*?(\d+) bytes stack frame, (\d+) bytes spill stores"
    r".*?Used (\d+) registers",
    re.S,
)


@pytest.mark.parametrize("arch", [75, 90])
@pytest.mark.parametrize("element_size", [1, 2, 4, 8])
def test_the_grouped_kernel_compiles_with_nvrtc(arch, element_size):
    """And without local memory, in few registers on the H100/H200: one
    kernel serves both walks, so its registers (the larger walk's) set how
    many threads an SM holds for both; the element walk ran at 31% of copy
    bandwidth in 80 registers, when the row walk's threads held 64 bytes
    each."""
    source = _C.layout_copies_source(element_size)
    name = f"nvfuse_layout_copies_{element_size}"
    compiled = _C.nvrtc_compile(source, name, arch, ["--ptxas-options=-v"])
    assert compiled["bytes"] > 0
    (entry,) = PTXAS_ENTRY.finditer(compiled["log"])
    registers, stack, spilled = int(entry.group(4)), int(entry.group(2)), int(entry.group(3))
    assert stack == 0 and spilled == 0
    assert arch != 90 or registers <= 48, registers


def test_a_compiled_channels_last_network_matches_eager_on_the_cpu(monkeypatch):
    from nvfuse.dynamo import pipeline

    grouped = []

    def recording(gm):
        grouped.append(group_weight_layouts(gm))
        return grouped[-1]

    monkeypatch.setattr(pipeline, "group_weight_layouts", recording)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1, bias=False),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 1, bias=False),
    )
    x = torch.randn(2, 3, 10, 10)
    nvfuse.dynamo.clear_reports()
    compiled = torch.compile(model, backend="nvfuse", options={"channels_last": True})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    x.requires_grad_(True)
    compiled(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    x.grad = None
    model(x).sum().backward()
    for got, p in zip(grads, model.parameters()):
        torch.testing.assert_close(got, p.grad, rtol=1e-4, atol=1e-4)
    # The inference graph, the forward and the backward each grouped theirs.
    assert grouped == [True, True, True]


def _gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64])
def test_grouped_copies_have_atens_bits(dtype):
    _gpu()
    torch.manual_seed(0)
    sources = []
    for k in range(60):  # more than one launch's parameter block takes
        o, i, h = 1 + k % 7, 1 + (k * 5) % 13, 1 + k % 4
        t = torch.randint(0, 100, (o, i, h, 3 if k % 2 else 1), device="cuda").to(dtype)
        sources.append(t)
    sources.append(torch.randn(5, 7, 9, device="cuda").to(dtype).permute(2, 0, 1))
    sources.append(torch.randn(6, 1, device="cuda").to(dtype).expand(6, 11))
    sources.append(torch.randn(1000, 3, device="cuda").to(dtype)[::3])  # 334 rows, odd numel
    strides = []
    for t in sources:
        if t.dim() == 4:
            strides.append(list(torch.empty_like(t, memory_format=CL).stride()))
        else:
            strides.append(
                list(torch.empty(t.shape[::-1]).permute(*range(t.dim() - 1, -1, -1)).stride())
            )
    # Rows of a wider tensor (a padded GEMM result's) copied dense, starting
    # at every alignment: whole vectors, half vectors and single elements.
    for start in range(4):
        sources.append(torch.randn(37, 64, device="cuda").to(dtype)[:, start : start + 50])
        strides.append([50, 1])
    # Rows long enough to be walked as rows: from every alignment of the
    # widest vector, to dense rows of odd widths, and one flat row.
    for start in range(17):
        sources.append(torch.randn(9, 5000, device="cuda").to(dtype)[:, start : start + 4093])
        strides.append([4093, 1])
    sources.append(torch.randn(8, 3072, device="cuda").to(dtype)[:, :3000])
    strides.append([3000, 1])
    sources.append(torch.randn(70001, device="cuda").to(dtype)[1:])
    strides.append([1])
    sources.append(torch.randn(1, 3000, device="cuda").to(dtype).expand(5, 3000))  # rows 0 apart
    strides.append([3000, 1])
    copies = copy_into_layouts(sources, strides)
    torch.cuda.synchronize()
    for t, s, c in zip(sources, strides, copies):
        want = torch.empty_strided(t.shape, s, dtype=dtype, device="cuda").copy_(t)
        assert c.stride() == tuple(s)
        assert torch.equal(c, want)


@pytest.mark.gpu
def test_a_compiled_channels_last_network_runs_its_weight_copies_in_one_launch():
    _gpu()
    torch.manual_seed(0)
    model = (
        torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False),
            torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),
            torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, padding=1, bias=False),
        )
        .to("cuda", torch.bfloat16)
        .eval()
    )
    x = torch.randn(4, 3, 32, 32, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(model, backend="nvfuse")
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            compiled(x)
            torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert sum("nvfuse_layout_copies" in n for n in names) == 1
