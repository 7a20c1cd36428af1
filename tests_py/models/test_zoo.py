"""The real-model zoo (workloads/model_zoo.py: transformers, timm and
torchvision models built from configs) through torch.compile(backend=
"nvfuse"): an inference step and a training step each, outputs, every
parameter's gradient and the running statistics against eager.

On the CPU (nvfuse's reference path) at tiny sizes, fp32: relative error
(2-norm) at most 1e-4 for outputs and 1e-3 for gradients. On the GPU
(marked) at small realistic sizes, fp32 with the same bounds and bf16
autocast no worse than twice eager's own error against fp32
(workloads/zoo_accuracy.py says why). Every model must also leave no op nvfuse has
to ATen: the report names only GEMMs, convolutions, attention, lone ops
and ops nvfuse does not implement."""

import pytest
import torch

import nvfuse.dynamo
from workloads import model_zoo, zoo_accuracy

pytest.importorskip("transformers")
pytest.importorskip("timm")
pytest.importorskip("torchvision")

CUDA = torch.cuda.is_available()
MODELS = list(model_zoo.BUILDERS)

# Ops nvfuse has no kernel or translation for, which may stay ATen calls.
NOT_IN_NVFUSE = {
    "aten.max_pool2d_with_indices.default",
    "aten.max_pool2d_with_indices_backward.default",
}


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _check(errors):
    over = zoo_accuracy.over_bounds(errors)
    assert not over, f"out of bounds (value, bound): {over}; all errors: {errors}"


def _no_op_nvfuse_has_left_out(not_in_nvfuse=NOT_IN_NVFUSE):
    for report in nvfuse.dynamo.reports():
        for node, target, reason in report.unfused:
            assert "has no nvfuse translation" not in reason or target in not_in_nvfuse, (
                f"{node} ({target}): {reason}"
            )
        assert report.fused_ops > 0


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_eager_on_the_cpu(name, training):
    _check(zoo_accuracy.step_errors(name, "tiny", "cpu", False, training))
    _no_op_nvfuse_has_left_out()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_eager_on_the_gpu(name, training, dtype):
    _check(zoo_accuracy.step_errors(name, "small", "cuda", dtype is torch.bfloat16, training))
    _no_op_nvfuse_has_left_out()


@pytest.mark.parametrize("name", ["gpt2", "bert", "t5", "vit"])
def test_zoo_model_trains_with_dropout_on_the_cpu(name):
    # The masks differ from eager's (each draws its own way): the step must
    # run, stay finite and draw its masks inside nvfuse's fusions.
    zoo = model_zoo.build(name, "tiny", dropout=0.1)
    model = zoo.model.train()
    out = torch.compile(model, backend="nvfuse")(**zoo.batch("cpu"))
    loss = model_zoo.ZooModel.loss(out)
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    fused = {op for r in nvfuse.dynamo.reports() for _, ops in r.fusions for op in ops}
    assert "aten.native_dropout.default" in fused
