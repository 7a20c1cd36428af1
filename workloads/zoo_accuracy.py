"""How a compiled step of a zoo model (model_zoo.py) is judged against
eager: the relative errors (2-norm) of the outputs, of every parameter's
gradient and of the running statistics.

- fp32: nvfuse against eager directly, with TF32 off for both (cuDNN's
  TF32 convolutions differ with the layout they are given, by far more
  than fp32 rounding). Bounds FP32_BOUNDS.
- bf16 autocast: both against the fp32 eager step as the reference;
  nvfuse's error may be at most twice eager's own plus BF16_SLACK (the
  test torch's own accuracy checker makes): eager's bf16 error is the
  measure of what rounding does to this model.

A gradient whose reference norm is below GRADIENT_FLOOR of the largest
gradient norm is rounding noise around an exact zero (a key projection's
bias under softmax, which is invariant to it): its error is measured
against that floor instead of its own norm."""

import contextlib
import copy

import torch

from . import model_zoo

FP32_BOUNDS = {"output": 1e-4, "gradient": 1e-3, "buffer": 1e-4}
BF16_SLACK = 1e-3
GRADIENT_FLOOR = 1e-5


def relative_error(got, want):
    """|got - want| / |want| in the 2-norm, computed in double (the
    difference alone when want is zero)."""
    got, want = got.detach().double(), want.detach().double()
    scale = want.norm().item()
    difference = (got - want).norm().item()
    return difference / scale if scale > 0 else difference


def gradient_errors(model, reference):
    """Per parameter name, the relative error of `model`'s gradient against
    `reference`'s (a copy that ran the same step), against at least
    GRADIENT_FLOOR times the largest reference gradient norm."""
    pairs = [
        (name, p.grad, q.grad)
        for (name, p), q in zip(model.named_parameters(), reference.parameters())
        if q.grad is not None
    ]
    floor = GRADIENT_FLOOR * max((w.double().norm().item() for _, _, w in pairs), default=0)
    errors = {}
    for name, got, want in pairs:
        if got is None:
            errors[name] = float("inf")
            continue
        difference = (got.double() - want.double()).norm().item()
        errors[name] = difference / max(want.double().norm().item(), floor, 1e-30)
    return errors


def buffer_errors(model, reference):
    """Per floating-point buffer (batch norm's running statistics), the
    relative error against `reference`'s."""
    return {
        name: relative_error(b, c)
        for (name, b), c in zip(model.named_buffers(), reference.buffers())
        if b.is_floating_point()
    }


@contextlib.contextmanager
def _no_tf32():
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _run(model, batch, training, bf16):
    device = next(model.parameters()).device.type
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=bf16)
    with autocast, torch.set_grad_enabled(training):
        out = model(**batch)
        if training:
            model_zoo.ZooModel.loss(out).backward()
    return model_zoo.ZooModel.logits(out).detach()


def _errors(model, logits, reference, reference_logits, training):
    errors = {"output": relative_error(logits, reference_logits)}
    if training:
        grads = gradient_errors(model, reference)
        errors["gradient"] = max(grads.values())
        errors["worst parameter"] = max(grads, key=grads.get)
        errors["buffer"] = max(buffer_errors(model, reference).values(), default=0.0)
    return errors


def step_errors(name, size, device, bf16, training):
    """The errors of a compiled step of zoo model `name`: {"nvfuse":
    errors, "eager": errors or None}, each {"output", and when training
    "gradient", "worst parameter", "buffer"}; in bf16 both against the
    fp32 eager step, in fp32 nvfuse against eager (then "eager" is None)."""
    zoo = model_zoo.build(name, size)
    model = zoo.model.to(device).train(training)
    batch = zoo.batch(device)
    with _no_tf32():
        reference = copy.deepcopy(model)
        reference_logits = _run(reference, batch, training, bf16=False)
        eager_errors = None
        if bf16:
            eager = copy.deepcopy(model)
            eager_errors = _errors(
                eager, _run(eager, batch, training, True), reference, reference_logits, training
            )
        compiled = torch.compile(model, backend="nvfuse")
        logits = _run(compiled, batch, training, bf16)
    nvfuse_errors = _errors(model, logits, reference, reference_logits, training)
    return {"nvfuse": nvfuse_errors, "eager": eager_errors}


def over_bounds(errors):
    """The measures of `step_errors`' result that are out of bounds, with
    their values (empty when the step passes)."""
    nvfuse, eager = errors["nvfuse"], errors["eager"]
    over = {}
    for measure, value in nvfuse.items():
        if measure == "worst parameter":
            continue
        bound = FP32_BOUNDS[measure] if eager is None else 2 * eager[measure] + BF16_SLACK
        if value > bound:
            over[measure] = (value, bound)
    return over
