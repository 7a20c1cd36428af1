"""Real models beyond the zoo (workloads/wider_zoo.py: MoE routing,
disentangled and windowed attention, squeeze-and-excitation, attention
biases by index) through torch.compile(backend="nvfuse") on the CPU: an
inference and a training step each against eager, by the zoo's accuracy
rules (workloads/zoo_accuracy.py), and no op left to ATen that nvfuse
translates."""

import pytest

from workloads import wider_zoo, zoo_accuracy

from .test_zoo import NOT_IN_NVFUSE as ZOO_NOT_IN_NVFUSE
from .test_zoo import _check, _no_op_nvfuse_has_left_out

pytest.importorskip("transformers")
pytest.importorskip("timm")
pytest.importorskip("torchvision")

# Ops these models hold that nvfuse runs as ATen calls or has no kernel
# for: MoE routing (topk, sort and histc run as ATen calls in nvfuse's
# own frontend too, and transformers' grouped GEMM is a custom op) and
# GPT-J's position table (repeat, computed once per call on a small
# tensor).
NOT_IN_NVFUSE = ZOO_NOT_IN_NVFUSE | {
    "aten.topk.default",
    "aten.sort.default",
    "aten.histc.default",
    "transformers.grouped_mm_fallback.default",
    "aten.repeat.default",
}

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", list(wider_zoo.BUILDERS))
def test_wider_model_matches_eager_on_the_cpu(name, training):
    _check(zoo_accuracy.step_errors(name, "tiny", "cpu", False, training))
    _no_op_nvfuse_has_left_out(NOT_IN_NVFUSE)
