"""1x1 convolutions of channels-last images as GEMMs
(passes/pixel_convolutions.py): after the channels-last pass, each 1x1
convolution of stride 1, and its backward, becomes GEMMs over views of
the image. Checked on the CPU: the rewritten graphs run by ATen alone
against eager, forward and backward, then the whole backend."""

import pytest
import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.channels_last import run_convolutions_channels_last
from nvfuse.dynamo.passes.pixel_convolutions import rewrite_pixel_convolutions


class Bottleneck(torch.nn.Module):
    """A ResNet bottleneck's shape: 1x1, 3x3 (of `stride`), 1x1, and a
    1x1 shortcut of the same stride."""

    def __init__(self, stride=1, bias=False):
        super().__init__()
        self.reduce = torch.nn.Conv2d(8, 4, 1, bias=bias)
        self.spatial = torch.nn.Conv2d(4, 4, 3, stride=stride, padding=1, bias=bias)
        self.expand = torch.nn.Conv2d(4, 8, 1, bias=bias)
        self.shortcut = torch.nn.Conv2d(8, 8, 1, stride=stride, bias=bias)

    def forward(self, x):
        y = torch.relu(self.reduce(x))
        y = torch.relu(self.spatial(y))
        return torch.relu(self.expand(y) + self.shortcut(x))


def _compiled_with_the_passes_only(model, seen, channels_last=True):
    """`model` through AOTAutograd with compilers that apply the
    channels-last pass (as asked) and this one and run the rewritten graphs
    by ATen; records each graph in `seen`."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def compiler(kind):
        def compile_graph(gm, example_inputs):
            run_convolutions_channels_last(gm, example_inputs, kind, channels_last)
            rewrite_pixel_convolutions(gm)
            seen.append(gm)
            return make_boxed_func(gm.forward)

        return compile_graph

    backend = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"))
    return torch.compile(model, backend=backend)


def _convolution_kernels(gm):
    """The kernel sizes of gm's convolutions, forward and backward."""
    sizes = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and "convolution" in str(node.target):
            weight = node.args[2 if "backward" in str(node.target) else 1]
            sizes.append(tuple(weight.meta["val"].shape[2:]))
    return sizes


def _pair(**kwargs):
    torch.manual_seed(0)
    model, reference = Bottleneck(**kwargs), Bottleneck(**kwargs)
    reference.load_state_dict(model.state_dict())
    return model.double(), reference.double()


def _step(model, x):
    out = model(x)
    # A gradient that differs by element, in any layout.
    weights = (torch.arange(out.numel(), device=out.device) % 7).to(out.dtype).view(out.shape)
    (out * weights).sum().backward()
    return out


def _check_against_eager(compiled, model, reference, x):
    x_ref = x.detach().clone().requires_grad_()
    x = x.detach().clone().requires_grad_()
    out = _step(compiled, x)
    want = _step(reference, x_ref)
    torch.testing.assert_close(out, want)
    assert out.stride() == want.stride()
    torch.testing.assert_close(x.grad, x_ref.grad)
    for p, p_ref in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, p_ref.grad)


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
def test_unit_stride_pointwise_convolutions_become_gemms_with_eager_results(bias):
    model, reference = _pair(bias=bias)
    seen = []
    compiled = _compiled_with_the_passes_only(model, seen)
    _check_against_eager(compiled, model, reference, torch.randn(2, 8, 6, 5, dtype=torch.float64))
    assert len(seen) == 2
    # Left: the 3x3 convolution, forward and backward.
    assert all(_convolution_kernels(gm) == [(3, 3)] for gm in seen), seen


def test_strided_pointwise_convolutions_stay_with_cudnn():
    model, reference = _pair(stride=2)
    seen = []
    compiled = _compiled_with_the_passes_only(model, seen)
    _check_against_eager(compiled, model, reference, torch.randn(2, 8, 6, 6, dtype=torch.float64))
    assert all(sorted(_convolution_kernels(gm)) == [(1, 1), (3, 3)] for gm in seen), seen


def test_convolutions_of_images_not_channels_last_stay():
    model, reference = _pair()
    seen = []
    compiled = _compiled_with_the_passes_only(model, seen, channels_last=False)
    _check_against_eager(compiled, model, reference, torch.randn(2, 8, 6, 5, dtype=torch.float64))
    assert all(len(_convolution_kernels(gm)) == 4 for gm in seen)


def test_a_channels_last_input_without_the_option_becomes_gemms_too():
    """A model the user ran channels-last: its images are so already."""
    model, reference = _pair()
    seen = []
    compiled = _compiled_with_the_passes_only(model, seen, channels_last=False)
    x = torch.randn(2, 8, 6, 5, dtype=torch.float64).to(memory_format=torch.channels_last)
    _check_against_eager(compiled, model, reference, x)
    assert _convolution_kernels(seen[0]) == [(3, 3)]


def test_backend_runs_pointwise_convolutions_as_gemms():
    from nvfuse.dynamo.pipeline import clear_reports, reports

    clear_reports()
    model, reference = _pair()
    model, reference = model.float(), reference.float()
    compiled = torch.compile(model, backend="nvfuse", options={"channels_last": True})
    x = torch.randn(2, 8, 6, 5)
    x_ref = x.clone().requires_grad_()
    x.requires_grad_()
    torch.testing.assert_close(_step(compiled, x), _step(reference, x_ref), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-4, atol=1e-4)
    for p, p_ref in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, p_ref.grad, rtol=1e-4, atol=1e-4)
    calls = "".join(str(r) for r in reports())
    # The 3x3 convolution's forward and backward only.
    assert calls.count("(aten.convolution.default)") == 1, calls
    assert calls.count("(aten.convolution_backward.default)") == 1, calls


@pytest.mark.gpu
def test_backend_runs_bf16_cuda_pointwise_convolutions_as_gemms_near_eager():
    """The default ("auto") on CUDA in bf16: the block's 1x1 convolutions
    run as cuBLAS GEMMs over channels-last views; results and gradients
    near eager's cuDNN ones, against the largest magnitude (bf16 sums in
    another order)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from nvfuse.dynamo.pipeline import clear_reports, reports

    clear_reports()
    model, reference = _pair()
    model, reference = model.cuda().bfloat16(), reference.cuda().bfloat16()
    compiled = torch.compile(model, backend="nvfuse")
    x = torch.randn(4, 8, 14, 14, device="cuda", dtype=torch.bfloat16)
    x_ref = x.clone().requires_grad_()
    x.requires_grad_()
    got, want = _step(compiled, x), _step(reference, x_ref)
    pairs = [(got, want), (x.grad, x_ref.grad)]
    pairs += [(p.grad, q.grad) for p, q in zip(model.parameters(), reference.parameters())]
    for a, b in pairs:
        scale = b.float().abs().max().item()
        assert (a.float() - b.float()).abs().max().item() <= 2e-2 * scale + 1e-3
    calls = "".join(str(r) for r in reports())
    assert calls.count("(aten.convolution.default)") == 1, calls
    assert calls.count("(aten.convolution_backward.default)") == 1, calls


@pytest.mark.gpu
def test_cuda_float32_pointwise_convolutions_stay_with_cudnn():
    """cuDNN runs float32 convolutions in TF32 by default and cuBLAS's
    float32 GEMMs not: the GEMMs would be slower and round otherwise."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    model, reference = _pair()
    model, reference = model.cuda().float(), reference.cuda().float()
    seen = []
    compiled = _compiled_with_the_passes_only(model, seen)
    x = torch.randn(2, 8, 6, 5, device="cuda")
    _step(compiled, x.clone().requires_grad_())
    assert all(len(_convolution_kernels(gm)) == 4 for gm in seen)
