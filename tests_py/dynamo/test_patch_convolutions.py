"""Patch convolutions as GEMMs (passes/patch_convolutions.py): a
convolution whose kernel tiles its image, and its backward, become GEMMs
over the image's patches in the graphs AOTAutograd gives the backend.
Checked on the CPU: the rewritten graphs run by ATen alone against eager,
forward and backward, then the whole backend."""

import pytest
import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.patch_convolutions import rewrite_patch_convolutions

from .conftest import compiled_with_passes


class PatchEmbedding(torch.nn.Module):
    """A vision transformer's patch embedding and a head reading it."""

    def __init__(self, channels=3, width=16, kernel=(4, 4), stride=None, padding=0, bias=True):
        super().__init__()
        self.conv = torch.nn.Conv2d(
            channels, width, kernel, stride=stride or kernel, padding=padding, bias=bias
        )
        self.head = torch.nn.Linear(width, 5)

    def forward(self, x):
        tokens = self.conv(x).flatten(2).transpose(1, 2)
        return self.head(torch.nn.functional.gelu(tokens))


def _compiled_with_the_pass_only(model, seen):
    return compiled_with_passes(model, seen, rewrite_patch_convolutions)


def _convolutions(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and "convolution" in str(n.target)]


def _pair(**kwargs):
    torch.manual_seed(0)
    model, reference = PatchEmbedding(**kwargs), PatchEmbedding(**kwargs)
    reference.load_state_dict(model.state_dict())
    return model, reference


def _step(model, x):
    out = model(x)
    out.square().sum().backward()
    return out


@pytest.mark.parametrize(
    "kwargs, image_grad",
    [
        (dict(), False),
        (dict(), True),
        (dict(bias=False), True),
        (dict(channels=2, kernel=(2, 3)), True),
    ],
    ids=["image", "image-grad", "no-bias", "oblong-kernel"],
)
def test_patch_convolutions_become_gemms_with_eager_results(kwargs, image_grad):
    model, reference = _pair(**kwargs)
    seen = []
    compiled = _compiled_with_the_pass_only(model, seen)
    channels = kwargs.get("channels", 3)
    x = torch.randn(2, channels, 8, 12, dtype=torch.float64).requires_grad_(image_grad)
    model.double(), reference.double()
    x_ref = x.detach().clone().requires_grad_(image_grad)
    torch.testing.assert_close(_step(compiled, x), _step(reference, x_ref))
    for p, p_ref in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, p_ref.grad)
    if image_grad:
        torch.testing.assert_close(x.grad, x_ref.grad)
    assert len(seen) == 2
    assert all(not _convolutions(gm) for gm in seen)


@pytest.mark.parametrize(
    "kwargs",
    [dict(kernel=(4, 4), stride=(2, 2)), dict(kernel=(4, 4), padding=1), dict(kernel=(1, 1))],
    ids=["overlapping", "padded", "pointwise"],
)
def test_other_convolutions_stay(kwargs):
    model, reference = _pair(**kwargs)
    seen = []
    compiled = _compiled_with_the_pass_only(model, seen)
    x = torch.randn(2, 3, 8, 12)
    torch.testing.assert_close(_step(compiled, x), _step(reference, x))
    assert all(_convolutions(gm) for gm in seen)


def test_an_image_not_tiled_by_the_kernel_stays():
    model, reference = _pair()
    seen = []
    compiled = _compiled_with_the_pass_only(model, seen)
    x = torch.randn(2, 3, 9, 12)  # 9 rows: the last row is in no patch
    torch.testing.assert_close(_step(compiled, x), _step(reference, x))
    assert all(_convolutions(gm) for gm in seen)


def test_backend_runs_a_patch_embedding_as_gemms():
    model, reference = _pair()
    x = torch.randn(2, 3, 8, 12)
    compiled = torch.compile(model, backend="nvfuse")
    torch.testing.assert_close(_step(compiled, x), _step(reference, x), rtol=1e-4, atol=1e-4)
    for p, p_ref in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, p_ref.grad, rtol=1e-4, atol=1e-4)
    reports = nvfuse.dynamo.pipeline.reports()
    assert reports and all("aten.convolution" not in str(r) for r in reports)
