"""Running a model through Lightning Thunder's nvFuser executor on nvfuse,
and comparing it with eager PyTorch: shared by the Thunder client tests and
tools/thunder_report.py."""

import copy

import torch

import nvfuse


def import_thunder():
    """thunder and its nvFuser executor (None when Thunder refuses nvfuse),
    after making `import nvfuser` resolve to nvfuse."""
    nvfuse.as_nvfuser()
    import thunder
    from thunder.executors.nvfuserex import nvfuserex

    return thunder, nvfuserex


def thunder_executors(thunder, nvfuserex, sdpa):
    executors = [nvfuserex]
    if sdpa:
        from thunder.executors.sdpaex import sdpa_ex

        executors = [sdpa_ex, nvfuserex]
    return executors


def loss_of(output):
    """A scalar loss whose gradient is not degenerate: the output against a
    fixed random tensor (a sum of squares of a layer norm's output is
    constant, and its gradient pure rounding noise)."""
    if output.dim() == 0:
        return output
    generator = torch.Generator(device=output.device).manual_seed(1)
    weights = torch.randn(output.shape, generator=generator, device=output.device)
    return (output.float() * weights).mean()


def train_steps(model, inputs, steps=2, lr=1e-2):
    """Outputs and parameter gradients of `steps` forward+backward steps with
    SGD updates in between: [(output, {name: grad})]."""
    results = []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        out = model(*inputs)
        loss_of(out).backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        results.append((out.detach().clone(), grads))
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    return results


def thunder_and_eager(model, inputs, executors, steps=2):
    """(thunder results, eager results, jitted function) of the same model
    from the same parameters."""
    import thunder

    eager_model = copy.deepcopy(model)
    jitted = thunder.jit(model, executors=executors)
    return (train_steps(jitted, inputs, steps), train_steps(eager_model, inputs, steps), jitted)


def nvfuse_fusions(thunder, jitted):
    """The FusionDefinitions Thunder ran on nvfuse in the last forward and
    backward traces: [(trace name, fusion name, fd)]."""
    found = []
    traces = [
        ("forward", thunder.last_traces(jitted)),
        ("backward", thunder.last_backward_traces(jitted)),
    ]
    for kind, history in traces:
        if not history:
            continue
        trace = history[-1]
        ctx = trace.python_ctx()
        for bsym in trace.bound_symbols:
            if bsym.sym.name.startswith("nvFusion"):
                wrapper = ctx.get(bsym.sym.name)
                fd = getattr(wrapper, "last_used", None)
                found.append((kind, bsym.sym.name, fd))
    return found
