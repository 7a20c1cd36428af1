"""A quick GPU check of the reduction kernels against torch: inner and outer
sums, var_mean, softmax, layer norm (the seed), split reductions. Prints one
line per case and exits non-zero on a mismatch. For iterating on the
scheduler; the full tests are tests_py/test_gpu_reductions.py."""

import sys

import torch

sys.path.insert(0, "tests_py")
from nvfuse import DataType, FusionDefinition  # noqa: E402

failures = 0


def check(name, build, inputs, reference, rtol=1e-4, atol=1e-4):
    global failures
    with FusionDefinition() as fd:
        build(fd)
    try:
        outs = fd.execute(inputs)
        expected = reference(*inputs)
        ran = "nvfuse_reduction" in fd.last_cuda_code()
        for o, e in zip(outs, expected):
            torch.testing.assert_close(o.float(), e.float(), rtol=rtol, atol=atol, equal_nan=True)
        params = [l for l in fd.last_cuda_code().splitlines() if "ReductionParams" in l]
        print(f"ok   {name:40s} kernel={ran} {params[0][3:] if params else ''} {fd.last_kernel_info()}")
    except Exception as e:  # noqa: BLE001
        failures += 1
        print(f"FAIL {name}: {str(e)[:2000]}")


def tensor(fd, rank, dtype):
    return fd.define_tensor(shape=[-1] * rank, contiguity=True, dtype=dtype)


for rows, width in [(1000, 1), (513, 7), (256, 1600), (64, 8192), (8, 65536), (2, 262144), (1, 1 << 22)]:
    for dt, tdt in [(DataType.Float, torch.float32), (DataType.BFloat16, torch.bfloat16)]:
        x = torch.randn(rows, width, device="cuda", dtype=tdt)
        tol = dict(rtol=1e-4, atol=1e-3) if tdt == torch.float32 else dict(rtol=2e-2, atol=2e-2)

        def sum_inner(fd):
            t = tensor(fd, 2, dt)
            fd.add_output(fd.ops.sum(fd.ops.cast(t, DataType.Float), dims=[1]))
        check(f"sum inner {rows}x{width} {tdt}", sum_inner, [x], lambda a: [a.float().sum(1)], **tol)

        def sum_outer(fd):
            t = tensor(fd, 2, dt)
            fd.add_output(fd.ops.sum(fd.ops.cast(t, DataType.Float), dims=[0]))
        check(f"sum outer {rows}x{width} {tdt}", sum_outer, [x], lambda a: [a.float().sum(0)], **tol)

        def var_mean_inner(fd):
            t = tensor(fd, 2, dt)
            v, m = fd.ops.var_mean(fd.ops.cast(t, DataType.Float), dims=[1], correction=1)
            fd.add_output(v)
            fd.add_output(m)
        check(f"var_mean inner {rows}x{width} {tdt}", var_mean_inner, [x],
              lambda a: list(torch.var_mean(a.float(), 1, correction=1)), **tol)

        def var_mean_outer(fd):
            t = tensor(fd, 2, dt)
            v, m = fd.ops.var_mean(fd.ops.cast(t, DataType.Float), dims=[0], correction=0)
            fd.add_output(v)
            fd.add_output(m)
        check(f"var_mean outer {rows}x{width} {tdt}", var_mean_outer, [x],
              lambda a: list(torch.var_mean(a.float(), 0, correction=0)), **tol)

        def softmax(fd):
            t = fd.ops.cast(tensor(fd, 2, dt), DataType.Float)
            m = fd.ops.max(t, dims=[1], keepdim=True)
            e = fd.ops.exp(t - m)
            s = fd.ops.sum(e, dims=[1], keepdim=True)
            fd.add_output(fd.ops.cast(e / s, dt))
        check(f"softmax {rows}x{width} {tdt}", softmax, [x],
              lambda a: [torch.softmax(a.float(), 1).to(a.dtype)], **tol)

        def layer_norm(fd):
            t = tensor(fd, 2, dt)
            w = tensor(fd, 1, dt)
            b = tensor(fd, 1, dt)
            xf = fd.ops.cast(t, DataType.Float)
            var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=True)
            y = (xf - mean) * fd.ops.rsqrt(var + 1e-5) * fd.ops.cast(w, DataType.Float) + fd.ops.cast(b, DataType.Float)
            fd.add_output(fd.ops.cast(y, dt))
            fd.add_output(mean)
        w = torch.randn(width, device="cuda", dtype=tdt)
        b = torch.randn(width, device="cuda", dtype=tdt)
        check(f"layer_norm {rows}x{width} {tdt}", layer_norm, [x, w, b],
              lambda a, w, b: [torch.nn.functional.layer_norm(a.float(), (width,), w.float(), b.float()).to(a.dtype),
                               a.float().mean(1, keepdim=True)], **tol)

from test_seed_layer_norm import nvfuser_fusion_id0  # noqa: E402
x = torch.randn(16, 128, 1600, device="cuda", dtype=torch.bfloat16)
w = torch.randn(1600, device="cuda", dtype=torch.bfloat16)
b = torch.randn(1600, device="cuda", dtype=torch.bfloat16)
check("seed 002 layer norm", nvfuser_fusion_id0, [x, w, b],
      lambda x, w, b: [torch.nn.functional.layer_norm(x.float(), (1600,), w.float(), b.float()).to(x.dtype)],
      rtol=2e-2, atol=2e-2)
print("failures:", failures)
sys.exit(1 if failures else 0)
