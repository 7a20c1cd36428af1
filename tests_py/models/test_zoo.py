"""The real-model zoo (workloads/model_zoo.py: transformers, timm and
torchvision models built from configs) through torch.compile(backend=
"nvfuse"): an inference step and a training step each, outputs, every
parameter's gradient and the running statistics against eager.

On the CPU (nvfuse's reference path) at tiny sizes, fp32: relative error
(2-norm) at most 1e-4 for outputs and 1e-3 for gradients. On the GPU
(marked) at small realistic sizes, fp32 with the same bounds and bf16
autocast with BF16_BOUNDS. Every model must also leave no op nvfuse has
to ATen: the report names only GEMMs, convolutions, attention, lone ops
and ops nvfuse does not implement."""

import copy

import pytest
import torch

import nvfuse.dynamo
from workloads import model_zoo

pytest.importorskip("transformers")
pytest.importorskip("timm")
pytest.importorskip("torchvision")

CUDA = torch.cuda.is_available()
MODELS = list(model_zoo.BUILDERS)
FP32_BOUNDS = {"output": 1e-4, "gradient": 1e-3, "buffer": 1e-4}
# bf16 autocast: eager and nvfuse round the same bf16 GEMM inputs, but
# accumulate elementwise chains and reductions in another order.
BF16_BOUNDS = {"output": 2e-2, "gradient": 5e-2, "buffer": 1e-2}

# Ops nvfuse has no kernel or translation for, which may stay ATen calls.
NOT_IN_NVFUSE = {
    "aten.max_pool2d_with_indices.default",
    "aten.max_pool2d_with_indices_backward.default",
}


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    nvfuse.dynamo.clear_reports()
    yield
    torch._dynamo.reset()


def _step(model, batch, training, autocast):
    with autocast, torch.set_grad_enabled(training):
        out = model(**batch)
        if training:
            model_zoo.ZooModel.loss(out).backward()
    return model_zoo.ZooModel.logits(out).detach()


def _errors(name, size, device, dtype, training):
    zoo = model_zoo.build(name, size)
    model = zoo.model.to(device).train(training)
    eager = copy.deepcopy(model)
    batch = zoo.batch(device)
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=dtype is torch.bfloat16)
    want = _step(eager, batch, training, autocast)
    got = _step(torch.compile(model, backend="nvfuse"), batch, training, autocast)
    errors = {"output": model_zoo.relative_error(got, want)}
    if training:
        errors["gradient"] = max(model_zoo.gradient_errors(model, eager).values())
        errors["buffer"] = max(model_zoo.buffer_errors(model, eager).values(), default=0.0)
    return errors


def _check(errors, bounds):
    over = {k: v for k, v in errors.items() if v > bounds[k]}
    assert not over, f"errors {errors} over the bounds {bounds}"


def _no_op_nvfuse_has_left_out():
    for report in nvfuse.dynamo.reports():
        for node, target, reason in report.unfused:
            assert "has no nvfuse translation" not in reason or target in NOT_IN_NVFUSE, (
                f"{node} ({target}): {reason}"
            )
        assert report.fused_ops > 0


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_eager_on_the_cpu(name, training):
    _check(_errors(name, "tiny", "cpu", torch.float32, training), FP32_BOUNDS)
    _no_op_nvfuse_has_left_out()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_eager_on_the_gpu(name, training, dtype):
    bounds = FP32_BOUNDS if dtype is torch.float32 else BF16_BOUNDS
    _check(_errors(name, "small", "cuda", dtype, training), bounds)
    _no_op_nvfuse_has_left_out()
