"""How a compiled step of a zoo model (model_zoo.py) is judged against
eager: the relative errors (2-norm) of the outputs, of every parameter's
gradient and of the running statistics.

- fp32: nvfuse against eager directly, with TF32 off for both (cuDNN's
  TF32 convolutions differ with the layout they are given, by far more
  than fp32 rounding): within FP32_BOUNDS; or, where a model amplifies
  rounding past them (batch norm's weight gradients in a deep ResNet sum
  tens of thousands of terms that cancel), no worse than eager against
  the fp64 step.
- bf16 autocast: against the fp32 eager step.

"No worse than eager" is the test torch's own accuracy checker makes:
against the higher-precision reference, nvfuse's error may be at most
twice eager's own plus a slack (SLACK): eager's error is the measure of
what rounding does to this model.

A gradient (or running statistic) whose reference norm is below
NOISE_FLOOR of the largest is rounding noise around an exact zero (a key
projection's bias under softmax, which is invariant to it; the running
mean of a batch norm whose input has zero mean): its error is measured
against that floor instead of its own norm."""

import contextlib
import copy

import torch

from . import model_zoo

FP32_BOUNDS = {"output": 1e-4, "gradient": 1e-3, "buffer": 1e-4}
SLACK = {torch.float32: 1e-5, torch.bfloat16: 1e-3}
NOISE_FLOOR = 1e-5


def relative_error(got, want):
    """|got - want| / |want| in the 2-norm, computed in double (the
    difference alone when want is zero)."""
    got, want = got.detach().double(), want.detach().double()
    scale = want.norm().item()
    difference = (got - want).norm().item()
    return difference / scale if scale > 0 else difference


def _floored_errors(pairs):
    """Per name, |got - want| / |want| for (name, got, want) triples, each
    against at least NOISE_FLOOR times the largest |want|."""
    floor = NOISE_FLOOR * max((w.double().norm().item() for _, _, w in pairs), default=0)
    errors = {}
    for name, got, want in pairs:
        if got is None:
            errors[name] = float("inf")
            continue
        difference = (got.double() - want.double()).norm().item()
        errors[name] = difference / max(want.double().norm().item(), floor, 1e-30)
    return errors


def gradient_errors(model, reference):
    """Per parameter name, the relative error of `model`'s gradient against
    `reference`'s (a copy that ran the same step)."""
    return _floored_errors(
        [
            (name, p.grad, q.grad)
            for (name, p), q in zip(model.named_parameters(), reference.parameters())
            if q.grad is not None
        ]
    )


def buffer_errors(model, reference):
    """Per floating-point buffer (batch norm's running statistics), the
    relative error against `reference`'s."""
    return _floored_errors(
        [
            (name, b, c)
            for (name, b), c in zip(model.named_buffers(), reference.buffers())
            if b.is_floating_point()
        ]
    )


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


def _in_double(batch):
    return {k: v.double() if v.is_floating_point() else v for k, v in batch.items()}


def step_errors(name, size, device, bf16, training):
    """The errors of a compiled step of zoo model `name`, each a dict of
    {"output", and when training "gradient", "worst parameter",
    "buffer"}: "direct" (nvfuse against eager; fp32 only), "nvfuse" and
    "eager" (each against the reference step: fp32 for bf16; for fp32 the
    fp64 step, run only when a direct error is over its bound, else
    None)."""
    zoo = model_zoo.build(name, size)
    model = zoo.model.to(device).train(training)
    batch = zoo.batch(device)
    errors = {"dtype": torch.bfloat16 if bf16 else torch.float32, "direct": None}
    with _no_tf32():
        reference = copy.deepcopy(model)
        eager = copy.deepcopy(model)
        eager_logits = _run(eager, batch, training, bf16)
        compiled = torch.compile(model, backend="nvfuse")
        logits = _run(compiled, batch, training, bf16)
        if not bf16:
            errors["direct"] = _errors(model, logits, eager, eager_logits, training)
            if not _over(errors["direct"], FP32_BOUNDS):
                errors["eager"] = errors["nvfuse"] = None
                return errors
            reference.double()
            batch = _in_double(batch)
        reference_logits = _run(reference, batch, training, False)
    errors["eager"] = _errors(eager, eager_logits, reference, reference_logits, training)
    errors["nvfuse"] = _errors(model, logits, reference, reference_logits, training)
    return errors


def _over(errors, bounds):
    return {
        measure: (value, bounds[measure])
        for measure, value in errors.items()
        if measure != "worst parameter" and value > bounds[measure]
    }


def over_bounds(errors):
    """The measures of `step_errors`' result that are out of bounds, with
    their values and bounds (empty when the step passes)."""
    nvfuse, eager, direct = errors["nvfuse"], errors["eager"], errors["direct"]
    if nvfuse is None:  # fp32 within FP32_BOUNDS against eager
        return {}
    slack = SLACK[errors["dtype"]]
    bounds = {m: 2 * v + slack for m, v in eager.items() if m != "worst parameter"}
    over = _over(nvfuse, bounds)
    if direct is not None:  # fp32: a measure within its direct bound passes
        over = {m: v for m, v in over.items() if direct[m] > FP32_BOUNDS[m]}
    return over
