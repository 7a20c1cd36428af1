"""Differential fuzzing: random fusions run by nvfuse and by a torch mirror
built alongside, compared with dtype-aware tolerances.

    python3 tools/fuzz.py --cases 2000 [--seed 0] [--device cpu|cuda]

A case is a random DAG of 1 to 30 ops over 1 to 3 inputs (random shapes
with zero-size and size-1 axes, dtypes bf16/fp16/fp32/int32/int64/bool,
contiguous, permuted, padded or expanded layouts; floating inputs of some
cases spiced with NaN and +-inf) of pointwise ops with tensors and Python
numbers (lerp and clamp among them), casts, where over mixed dtypes,
reductions (sum, amax, amin, mean, var, over axes of size 0 and 1 too),
slices with negative and out-of-range bounds, constant pads, reshapes,
permutes and indexing (index_select, gather, take_along_axis, their
int32/int64 index tensors extra inputs).
Cases run in a worker process, so a crash (a signal, an abort) is a
finding that names its case rather than the end of the run; the worker is
restarted after it. With --shrink a failing case is cut to the ops one
failing output needs and printed as a script that needs only nvfuse, torch
and this file.

The reference is torch on the case's device, with half precision computed
as torch's CUDA kernels compute it (cuda_like): where torch's CPU and CUDA
kernels disagree, nvfuse follows CUDA (docs/api.md). An output that
matches neither torch nor the case in float64, but lies between float64
evaluations whose reductions are nudged by a float sum's rounding, is
counted as explained (a reduction's rounding magnified by what follows
it: docs/api.md), not as a finding.
"""

import argparse
import multiprocessing as mp
import random
import sys
import time

DTYPES = ["bfloat16", "float16", "float32", "int32", "int64", "bool"]
FLOATS = ["bfloat16", "float16", "float32"]

# name: (arity, accepted operand kinds, torch spelling). Kinds: "f" floating,
# "i" integer, "b" bool. Each op is `torch.<name>` and `fd.ops.<name>`.
UNARY = {
    "neg": "fi",
    "abs": "fi",
    "exp": "f",
    "sin": "fib",
    "tanh": "f",
    "sigmoid": "f",
    "relu": "fi",
    "sqrt": "f",
    "log1p": "f",
    "floor": "f",
    "logical_not": "fib",
    "isnan": "fib",
    "reciprocal": "f",
    "cosh": "f",
    "expm1": "f",
    "lgamma": "f",
    "signbit": "f",
    "erf": "f",
    "isinf": "fi",
    "isfinite": "fi",
    "ceil": "f",
    "log": "f",
    "rsqrt": "f",
}
BINARY = {
    "add": "fi",
    "sub": "fi",
    "mul": "fib",
    "maximum": "fib",
    "minimum": "fib",
    "eq": "fib",
    "lt": "fi",
    "ge": "fi",
    "logical_and": "fib",
    "atan2": "f",
    "remainder": "f",
    "pow": "f",
    "fmod": "f",
    "ne": "fib",
    "le": "fi",
    "gt": "fi",
}
REDUCTIONS = {
    "sum": "fib",
    "amax": "fi",
    "amin": "fi",
    "mean": "f",
    "var": "f",
    "var_mean_mean": "f",
}
MAX_OPS = 30
# Indexing ops: torch.<name>(x, dim, index) is fd.ops.<name>(x, index, dim)
# (take_along_axis is torch.take_along_dim(x, index, dim)).
INDEXING = ["index_select", "gather", "take_along_axis"]


def kind_of(dtype):
    return "f" if dtype in FLOATS else ("b" if dtype == "bool" else "i")


def random_case(seed):
    """A case as plain data: {"inputs": [(shape, dtype, layout)], "indices":
    [(shape, dtype, bound)], "ops": [(op, operand indices or numbers,
    params)], "outputs": [value index]}. Values are numbered inputs first,
    then one per op; index tensors (random in [0, bound)) are inputs after
    `inputs`, named by ops' params, not values."""
    rng = random.Random(seed)
    rank = rng.choice([1, 2, 2, 3])
    shape = [
        rng.choice([0, 1, 1, 2, 3, 5, 8, 17, 64, 130]) if rng.random() < 0.9 else 0
        for _ in range(rank)
    ]
    if rng.random() < 0.8:
        shape = [max(n, 1) for n in shape]  # most cases have elements
    inputs = []
    for _ in range(rng.choice([1, 2, 2, 3])):
        dtype = rng.choice(DTYPES)
        layout = rng.choice(["contiguous", "contiguous", "permuted", "padded", "expanded"])
        inputs.append((list(shape), dtype, layout))
    values = [(list(shape), dtype) for shape, dtype, _ in inputs]
    ops, indices = [], []
    wanted = rng.randint(1, 8) if rng.random() < 0.6 else rng.randint(1, MAX_OPS)
    while len(ops) < wanted:
        op = random_op(rng, values, indices)
        if op is None:
            continue
        ops.append(op[0])
        if op[0][0] == "where":
            values.append((op[1][0], "bool"))  # its condition
        values.append(op[1])
    last = len(values) - 1
    outputs = sorted(
        {last} | {rng.randrange(len(inputs), len(values)) for _ in range(rng.randint(0, 2))}
    )
    spiced = rng.random() < 0.3
    return {
        "seed": seed,
        "inputs": inputs,
        "indices": indices,
        "ops": ops,
        "outputs": outputs,
        "spiced": spiced,
    }


def random_op(rng, values, indices):
    """(op, its result's (shape, dtype)) over existing values, or None.
    An op is (name, operands, params); an operand is a value index or
    ("number", x)."""
    i = rng.randrange(len(values))
    shape, dtype = values[i]
    kind = kind_of(dtype)
    choice = rng.random()
    result = None
    if choice < 0.3:
        name = rng.choice([n for n, kinds in UNARY.items() if kind in kinds])
        op, result = (name, [i], {}), result_of(name, [values[i]])
    elif choice < 0.65:
        name = rng.choice([n for n, kinds in BINARY.items() if kind in kinds])
        same = [j for j, v in enumerate(values) if v[0] == shape and kind_of(v[1]) in BINARY[name]]
        if rng.random() < 0.35 or not same:
            other = ("number", number_for(rng, kind))
            op, result = (name, [i, other], {}), result_of(name, [values[i], other[1]])
        else:
            j = rng.choice(same)
            op, result = (name, [i, j], {}), result_of(name, [values[i], values[j]])
    elif choice < 0.69 and kind == "f":
        return random_ternary(rng, i, values)
    elif choice < 0.72:
        target = rng.choice(DTYPES)
        op, result = ("cast", [i], {"dtype": target}), (shape, target)
    elif choice < 0.8:
        same = [j for j, v in enumerate(values) if v[0] == shape]
        a, b = rng.choice(same), rng.choice(same)
        if rng.random() < 0.3:
            b = ("number", number_for(rng, kind_of(values[a][1])))
            op, result = ("where", [i, a, b], {}), (shape, values[a][1])
        else:
            op, result = ("where", [i, a, b], {}), (shape, promote(values[a][1], values[b][1]))
    elif choice < 0.88 and shape:
        name = rng.choice([n for n, kinds in REDUCTIONS.items() if kind in kinds])
        axis = rng.randrange(len(shape))
        if name == "amax" and shape[axis] == 0:
            return None  # torch raises on an empty max
        if name == "amin" and shape[axis] == 0:
            return None
        out_dtype = "int64" if name == "sum" and kind != "f" else dtype
        params = {"dim": axis, "correction": rng.choice([0, 1])} if name == "var" else {"dim": axis}
        op, result = (name, [i], params), (shape[:axis] + shape[axis + 1 :], out_dtype)
    elif choice < 0.93 and shape:
        return random_indexing(rng, i, values[i], indices)
    elif choice < 0.95 and shape:
        return random_slice(rng, i, values[i])
    elif choice < 0.96 and shape:
        low, high = rng.choice([0, 1, 2]), rng.choice([0, 1, 3])
        padded = shape[:-1] + [shape[-1] + low + high]
        number = ("number", number_for(rng, kind))
        op, result = ("pad", [i, number], {"pad": [low, high]}), (padded, dtype)
    elif choice < 0.975 and len(shape) >= 2:
        merged = [shape[0] * shape[1]] + shape[2:]
        op, result = ("reshape", [i], {"shape": merged}), (merged, dtype)
    elif len(shape) >= 2:
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        op, result = ("permute", [i], {"dims": perm}), ([shape[p] for p in perm], dtype)
    return None if result is None else (op, result)


def random_ternary(rng, i, values):
    """lerp or clamp of the floating value `i` with numbers or a
    same-shaped floating value."""
    shape, dtype = values[i]
    floats = [j for j, v in enumerate(values) if v[0] == shape and v[1] in FLOATS]
    if rng.random() < 0.5:
        end = rng.choice(floats) if rng.random() < 0.6 else ("number", number_for(rng, "f"))
        weight = (
            rng.choice(floats)
            if rng.random() < 0.3
            else ("number", rng.choice([0.25, -0.5, 0.9, 1.5]))
        )
        # torch refuses mixed dtypes (the case is then skipped).
        return ("lerp", [i, end, weight], {}), (shape, dtype)
    low = rng.choice([-1.0, 0.0, 0.5])
    return ("clamp", [i, ("number", low), ("number", low + rng.choice([0.5, 2.0]))], {}), (
        shape,
        dtype,
    )


def random_slice(rng, i, value):
    """A slice of one axis with bounds as Python slicing takes them:
    negative (from the end) and past either end (clamped)."""
    shape, dtype = value
    axis = rng.randrange(len(shape))
    size = shape[axis]
    start = rng.randint(-size - 3, size + 3)
    end = rng.choice([rng.randint(-size - 3, size + 3), size, 1 << 40])
    starts, ends = [0] * len(shape), list(shape)
    starts[axis], ends[axis] = start, end
    sliced = list(shape)
    sliced[axis] = len(range(size)[slice(start, end)])
    return ("slice", [i], {"starts": starts, "ends": ends}), (sliced, dtype)


def random_indexing(rng, i, value, indices):
    """An indexing op over value `i` with a new index tensor in `indices`
    (or None when the axis is empty: there is nothing to index)."""
    shape, dtype = value
    name = rng.choice(INDEXING)
    axis = rng.randrange(len(shape))
    if shape[axis] == 0:
        return None
    picked = rng.choice([1, 3, 6])
    if name == "index_select":
        index_shape = [picked]
    else:
        index_shape = list(shape)
        index_shape[axis] = picked
    indices.append((index_shape, rng.choice(["int64", "int32"]), shape[axis]))
    result = list(shape)
    result[axis] = picked
    return (name, [i], {"dim": axis, "index": len(indices) - 1}), (result, dtype)


def number_for(rng, kind):
    if kind == "f":
        return rng.choice([0.1, -2.5, 0.3, 3.0, 1e-3, 100.7])
    if kind == "b":
        return rng.choice([True, False])
    return rng.choice([2, -3, 7, 0])


def promote(a, b):
    import torch

    return str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")


def result_of(name, operands):
    """The (shape, dtype) torch gives `name` of operands ((shape, dtype)
    values or numbers), or None when torch refuses them."""
    import torch

    tensors = [
        torch.zeros(o[0], dtype=getattr(torch, o[1])) if isinstance(o, tuple) else o
        for o in operands
    ]
    try:
        out = getattr(torch, name)(*tensors)
    except (RuntimeError, TypeError):
        return None
    return list(out.shape), str(out.dtype).replace("torch.", "")


# -- running a case ---------------------------------------------------------


def make_inputs(case, device):
    import torch

    g = torch.Generator().manual_seed(case["seed"])
    tensors = []
    for shape, dtype, layout in case["inputs"]:
        torch_dtype = getattr(torch, dtype)
        if dtype == "bool":
            t = torch.rand(shape, generator=g) < 0.5
        elif dtype in FLOATS:
            t = (torch.randn(shape, generator=g) * 3).to(torch_dtype)
        else:
            t = torch.randint(-9, 10, shape, generator=g).to(torch_dtype)
        if case.get("spiced") and dtype in FLOATS:
            t = _spiced(t, g)
        if layout == "permuted" and len(shape) >= 2:
            t = t.transpose(0, -1).contiguous().transpose(0, -1)
        elif layout == "padded" and shape:
            wide = torch.zeros(*shape[:-1], shape[-1] + 3, dtype=torch_dtype)
            t = wide[..., : shape[-1]].copy_(t)
        elif layout == "expanded" and shape and shape[0] > 1:
            t = t[:1].expand(shape)
        tensors.append(t.to(device))
    for shape, dtype, bound in case.get("indices", []):
        index = torch.randint(0, bound, shape, generator=g).to(getattr(torch, dtype))
        tensors.append(index.to(device))
    return tensors


def _refuse_undefined_cast(x, dtype):
    """A NaN or an infinity cast to an integer type has no defined value (C++
    leaves it undefined; CPUs and GPUs give different ones): such a case
    is skipped, as torch refusing it would be."""
    import torch

    if x.is_floating_point() and not (dtype.is_floating_point or dtype == torch.bool):
        if not torch.isfinite(x).all():
            raise RuntimeError("a non-finite value cast to an integer type")


def _spiced(t, g):
    """`t` with about a sixth of its elements NaN, +inf or -inf."""
    import torch

    flat = t.clone().view(-1)
    if flat.numel():
        for value, every in ((float("nan"), 13), (float("inf"), 17), (float("-inf"), 19)):
            count = max(1, flat.numel() // every)
            flat[torch.randint(0, flat.numel(), (count,), generator=g)] = value
    return flat.view(t.shape)


def apply(case, inputs, fd=None, nudge=0):
    """The case's outputs: computed by torch on `inputs` (fd None), or
    recorded into `fd` over its input handles (index tensors last). With
    `nudge` (+1 or -1, torch only), every reduction that rounds (sum, mean,
    var, var_mean's mean) is moved by that much of the rounding a float
    reduction may leave (_nudged)."""
    import torch

    values = list(inputs[: len(case["inputs"])])
    index_tensors = inputs[len(case["inputs"]) :]
    lib = torch if fd is None else fd.ops

    def operand(x):
        return x[1] if isinstance(x, (tuple, list)) else values[x]

    for name, args, params in case["ops"]:
        ins = [operand(a) for a in args]
        if fd is None and name in REDUCTIONS:
            value = _torch_reduction(name, ins[0], params)
            if nudge and name in ROUNDING_REDUCTIONS:
                value = _nudged(value, ins[0], name, params["dim"], nudge)
            values.append(value)
        elif name == "signbit":
            # The sign of a NaN is the kernel's (x86's invalid operations
            # give -NaN, CUDA's +NaN, and two ATen kernels for one op may
            # differ): nvfuse does not promise it (docs/api.md), so the
            # case asks signbit of NaN-free values only, on both sides.
            values.append(lib.signbit(lib.where(lib.isnan(ins[0]), 0.0, ins[0])))
        elif name == "where":
            values.append(lib.ne(ins[0], 0))
            values.append(lib.where(values[-1], ins[1], ins[2]))
        elif name == "cast":
            dtype = getattr(torch, params["dtype"])
            if fd is None:
                _refuse_undefined_cast(ins[0], dtype)
            values.append(ins[0].to(dtype) if fd is None else fd.ops.cast(ins[0], dtype))
        elif name == "var":
            values.append(fd.ops.var(ins[0], [params["dim"]], correction=params["correction"]))
        elif name == "var_mean_mean":
            values.append(fd.ops.var_mean(ins[0], [params["dim"]], correction=0)[1])
        elif name in REDUCTIONS:
            spelled = {"amax": "max", "amin": "min"}.get(name, name)
            values.append(getattr(fd.ops, spelled)(ins[0], [params["dim"]]))
        elif name == "pad" and fd is None:
            values.append(torch.nn.functional.pad(ins[0], params["pad"], value=ins[1]))
        elif name == "pad":
            values.append(fd.ops.pad(ins[0], params["pad"], ins[1]))
        elif name == "clamp" and fd is None:
            values.append(torch.clamp(ins[0], ins[1], ins[2]))
        elif name == "lerp" and fd is None:
            values.append(_torch_lerp(*ins))
        elif name in INDEXING:
            index, dim = index_tensors[params["index"]], params["dim"]
            if fd is not None:
                values.append(getattr(fd.ops, name)(ins[0], index, dim))
            elif name == "take_along_axis":
                values.append(torch.take_along_dim(ins[0], index.long(), dim))
            else:
                values.append(getattr(torch, name)(ins[0], dim, index.long()))
        elif name == "permute":
            values.append(lib.permute(ins[0], params["dims"]))
        elif name == "reshape":
            values.append(lib.reshape(ins[0], params["shape"]))
        elif name == "slice" and fd is None:
            values.append(
                ins[0][tuple(slice(a, b) for a, b in zip(params["starts"], params["ends"]))]
            )
        elif name == "slice":
            values.append(fd.ops.slice(ins[0], params["starts"], params["ends"]))
        elif fd is None:
            values.append(cuda_like(name, ins))
        else:
            values.append(getattr(lib, name)(*ins))
    return [values[i] for i in case["outputs"]]


# Reductions whose float result depends on the order values are summed in.
ROUNDING_REDUCTIONS = {"sum", "mean", "var", "var_mean_mean"}


def _torch_reduction(name, x, params):
    import torch

    if name == "var":
        return torch.var(x, params["dim"], correction=params["correction"])
    if name == "var_mean_mean":
        # nvfuse's var_mean gives torch.mean's mean, an infinity included,
        # where torch's Welford var_mean may give NaN (docs/api.md): the
        # mirror is told so.
        return torch.mean(x, params["dim"])
    return getattr(torch, name)(x, params["dim"])


# How far a float reduction's result may land from the exact one: a few
# float32 roundings per value summed, relative to the values' magnitude.
NUDGE = 2.0**-20


def _nudged(value, x, name, dim, nudge):
    """`value`, a reduction of `x` over `dim`, moved by `nudge` times the
    rounding a float reduction in another summation order may leave: NUDGE
    of the largest finite value's magnitude (its square for a variance,
    whose exact 0 for equal values a sum-based variance misses), plus NUDGE
    of the value's own."""
    import torch

    if not value.is_floating_point() or x.numel() == 0 or x.shape[dim] == 0:
        return value
    magnitude = torch.where(torch.isfinite(x), x, torch.zeros_like(x)).abs().amax(dim)
    scale = magnitude * magnitude if name == "var" else magnitude
    return value + nudge * NUDGE * (value.abs() + scale.to(value.dtype))


def _torch_lerp(start, end, weight):
    """torch.lerp with a number `end`, which torch takes only as a tensor:
    as nvfuse reads a number beside half-precision tensors (as torch's CUDA
    kernels read a Scalar weight), unrounded, in float, with one rounding
    of the result."""
    import torch

    if isinstance(end, torch.Tensor):
        return torch.lerp(start, end, weight)
    if isinstance(weight, torch.Tensor) and weight.dtype != start.dtype:
        # torch refuses a weight of another dtype (the case is skipped):
        # this raises as torch.lerp does.
        return torch.lerp(start, torch.full_like(start, end), weight)
    wide = start.float() if start.dtype in (torch.float16, torch.bfloat16) else start
    if isinstance(weight, torch.Tensor):
        weight = weight.to(wide.dtype)
    return torch.lerp(wide, torch.full_like(wide, end), weight).to(start.dtype)


# Ops whose torch CUDA kernels read a Python number unrounded (in Float).
UNROUNDED_NUMBERS = {"add", "sub", "mul", "div", "pow"}


def cuda_like(name, ins):
    """torch.<name>(*ins) as torch's CUDA kernels compute it, also on the
    CPU: half-precision tensors in float32, a Python number first rounded
    to the tensors' dtype except in UNROUNDED_NUMBERS, one rounding of the
    result. torch's CPU kernels differ in places (its fp16 sqrt rounds
    once where CUDA rounds twice, its add rounds the number); nvfuse
    follows CUDA."""
    import torch

    out_dtype = getattr(torch, name)(
        *[torch.zeros((), dtype=x.dtype) if isinstance(x, torch.Tensor) else x for x in ins]
    ).dtype
    common = torch.result_type(*ins) if len(ins) > 1 else ins[0].dtype
    if common not in (torch.float16, torch.bfloat16):
        return getattr(torch, name)(*ins)
    rounded = [
        torch.tensor(x, dtype=common).item()
        if not isinstance(x, torch.Tensor) and name not in UNROUNDED_NUMBERS
        else x
        for x in ins
    ]
    wide = [x.float() if isinstance(x, torch.Tensor) else x for x in rounded]
    return getattr(torch, name)(*wide).to(out_dtype)


def tolerance(dtype):
    import torch

    return {
        torch.bfloat16: (1.6e-2, 1e-2),
        torch.float16: (1e-3, 1e-3),
        torch.float32: (1e-4, 1e-5),
    }.get(dtype, (0, 0))


def check_case(case, device):
    """None when nvfuse matches torch, else what differs. Where it does not
    match torch's own evaluation, it may match the same ops evaluated in
    float64 (rounded at the case's casts and at the end): that is torch's
    rounding amplified (a variance of equal values that torch leaves at
    1e-9 under atan2, a power just under the Half maximum), which the
    reference is told about rather than reported."""
    from nvfuse import FusionDefinition

    inputs = make_inputs(case, device)
    try:
        want = apply(case, inputs)
    except (RuntimeError, TypeError):
        return None  # torch refuses the case: nothing to compare
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in inputs]
        for out in apply(case, handles, fd):
            fd.add_output(out)
    got = fd.execute(inputs)
    for k, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"output {k}: {g.dtype}{list(g.shape)} vs torch {w.dtype}{list(w.shape)}"
        difference = _difference(g, w)
        if difference and not _matches_float64(case, inputs, k, g):
            if _within_nudged_reductions(case, inputs, k, g):
                return f"{EXPLAINED} output {k}: {difference}"
            return f"output {k}: {difference}"
    return None


def _difference(got, want):
    import torch

    rtol, atol = tolerance(want.dtype)
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        return str(e).splitlines()[0]
    return None


def _matches_float64(case, inputs, k, got):
    """Whether output `k` matches the case evaluated in float64."""

    wide = [t.double() if t.is_floating_point() else t for t in inputs]
    try:
        exact = apply(case, wide)[k]
    except (RuntimeError, TypeError):
        return False
    return _difference(got, exact.to(got.dtype)) is None


# A finding explained as a reduction's rounding magnified by what follows
# it (docs/api.md: ill-conditioned ops after a reduction, the variance of
# equal values): counted apart, not a failure.
EXPLAINED = "explained (a reduction's rounding, magnified):"


def unexplained(findings):
    return {seed: f for seed, f in findings.items() if not f.startswith(EXPLAINED)}


def _within_nudged_reductions(case, inputs, k, got):
    """Whether output `k` lies, element by element, between the case's
    float64 evaluations with every rounding reduction nudged down, exact
    and nudged up (NaN only where one of them is NaN): the output is that
    sensitive to the last bits of a sum, as atan2(var, var) of equal
    values or pow(mean, -2.5) of a mean near 0 are."""
    import torch

    if not got.is_floating_point():
        return False
    wide = [t.double() if t.is_floating_point() else t for t in inputs]
    try:
        runs = [apply(case, wide, nudge=n)[k] for n in (-1, 0, 1)]
    except (RuntimeError, TypeError):
        return False
    if any(not r.is_floating_point() or r.shape != got.shape for r in runs):
        return False
    stacked = torch.stack([r.to(torch.float64) for r in runs])
    nan = torch.isnan(stacked)
    low = torch.where(nan, float("inf"), stacked).amin(0)
    high = torch.where(nan, float("-inf"), stacked).amax(0)
    rtol, atol = tolerance(got.dtype)
    slack = atol + rtol * torch.maximum(low.abs(), high.abs()).nan_to_num(posinf=0.0)
    value = got.to(torch.float64)
    inside = (value >= low - slack) & (value <= high + slack)
    return bool(torch.where(torch.isnan(value), nan.any(0), inside).all())


def script_of(case, device):
    return (
        f"# tools/fuzz.py case {case['seed']} on {device}\n"
        f"import sys; sys.path.insert(0, 'tools'); import fuzz\n"
        f"case = {case!r}\n"
        f"print(fuzz.check_case(case, {device!r}))\n"
    )


def worker(jobs, results, device):
    """Runs cases from `jobs` until None; sends (seed, finding) on the pipe
    `results` (synchronously: a case that kills the worker must not take
    the finding of the case before it along)."""
    for case in iter(jobs.get, None):
        if case.get("abort"):  # the crash path's own test
            import os

            os.abort()
        try:
            finding = check_case(case, device)
        except Exception as e:  # an nvfuse error torch does not raise
            from nvfuse.errors import NvfuseError

            kind = "typed" if isinstance(e, NvfuseError) else "UNTYPED"
            finding = f"{kind} {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        results.send((case["seed"], finding))


def run_cases(cases, device, case_timeout=300, deadline=None):
    """({seed: finding}, cases run) over `cases`, a worker process at a
    time; a worker that dies (or runs one case past `case_timeout` seconds)
    is a crash finding of the case it was running, and a new worker goes on.
    Past `deadline` (time.monotonic()), the cases not yet run are left out,
    so that a batch fits a time budget and still reports what it ran."""
    ctx = mp.get_context("spawn")
    findings = {}
    pending = list(cases)
    ran = 0
    while pending:
        jobs = ctx.Queue()
        receive, send = ctx.Pipe(duplex=False)
        for case in pending:
            jobs.put(case)
        jobs.put(None)
        process = ctx.Process(target=worker, args=(jobs, send, device))
        process.start()
        send.close()
        done = 0
        waited = 0
        while done < len(pending):
            if deadline is not None and time.monotonic() > deadline:
                process.kill()
                jobs.cancel_join_thread()
                return findings, ran + done
            ended = False
            if receive.poll(5):
                try:
                    seed, finding = receive.recv()
                except EOFError:  # the worker is gone
                    ended = True
                else:
                    waited = 0
                    if finding is not None:
                        findings[seed] = finding
                    done += 1
                    continue
            waited += 5
            if not ended and process.is_alive() and waited < case_timeout:
                continue
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                findings[pending[done]["seed"]] = f"CRASH: no result in {case_timeout} s"
            else:
                findings[pending[done]["seed"]] = f"CRASH exit code {process.exitcode}"
            done += 1
            break
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
        # Cases a dead worker never took stay in this queue: without this,
        # its feeder thread would block exit on a pipe nobody reads.
        jobs.cancel_join_thread()
        pending = pending[done:]
        ran += done
    return findings, ran


def run_side_by_side(cases, device, workers, deadline=None):
    """run_cases over `workers` shares of `cases`, each in its own worker
    process, side by side: ({seed: finding}, cases run)."""
    from concurrent.futures import ThreadPoolExecutor

    shares = [cases[k::workers] for k in range(max(1, workers))]
    findings, ran = {}, 0
    with ThreadPoolExecutor(len(shares)) as pool:
        for found, share_ran in pool.map(
            lambda share: run_cases(share, device, deadline=deadline), shares
        ):
            findings.update(found)
            ran += share_ran
    return findings, ran


def value_counts(case):
    """Per op, how many values it makes (where: its condition and itself)."""
    return [2 if name == "where" else 1 for name, _, _ in case["ops"]]


def only_outputs(case, outputs):
    """`case` cut to what `outputs` need, its values renumbered."""
    n_inputs = len(case["inputs"])
    counts = value_counts(case)
    first = [n_inputs + sum(counts[:k]) for k in range(len(counts))]
    needed, ops_needed = set(outputs), set()
    for k in reversed(range(len(counts))):
        made = range(first[k], first[k] + counts[k])
        if needed.intersection(made):
            ops_needed.add(k)
            needed.update(a for a in case["ops"][k][1] if not isinstance(a, (tuple, list)))
    renumber = {i: i for i in range(n_inputs)}
    ops, next_value = [], n_inputs
    for k in sorted(ops_needed):
        name, args, params = case["ops"][k]
        ops.append(
            (name, [a if isinstance(a, (tuple, list)) else renumber[a] for a in args], params)
        )
        for j in range(counts[k]):
            renumber[first[k] + j] = next_value + j
        next_value += counts[k]
    return dict(case, ops=ops, outputs=[renumber[o] for o in outputs])


def shrink(case, device):
    """The smallest part of a failing case that still fails: one output,
    and only the ops it needs."""
    for output in case["outputs"]:
        smaller = only_outputs(case, [output])
        if check_or_error(smaller, device) is not None:
            return smaller
    return case


def check_or_error(case, device):
    try:
        return check_case(case, device)
    except Exception as e:
        return f"{type(e).__name__}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes running cases side by side"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--shrink", action="store_true", help="print each failing case shrunk, as a script"
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds; cases not started by then are left out (the summary counts those run)",
    )
    args = parser.parse_args()
    cases = [random_case(args.seed + k) for k in range(args.cases)]
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    findings, ran = run_side_by_side(cases, args.device, args.workers, deadline)
    crashes = [s for s, f in findings.items() if f.startswith("CRASH")]
    for seed, finding in sorted(findings.items()):
        print(f"case {seed}: {finding}")
        if args.shrink and not finding.startswith(("CRASH", EXPLAINED)):
            print(script_of(shrink(random_case(seed), args.device), args.device))
    failing = unexplained(findings)
    print(
        f"{ran} cases on {args.device}: {len(failing)} findings, {len(crashes)} crashes "
        f"({len(findings) - len(failing)} more explained as a reduction's rounding)"
    )
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
