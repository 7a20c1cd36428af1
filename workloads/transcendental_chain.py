"""A pointwise fusion of many transcendental ops: the pointwise benchmark's
chain (sin, exp, tanh, sigmoid and arithmetic) repeated `steps` times, the
body whose inlined math routines set NVRTC's time."""

from nvfuse import DataType, FusionDefinition


def chain_fd(steps, dtype):
    """`dtype`: the nvfuse DataType of the [-1, -1] input and the output."""
    with FusionDefinition() as fd:
        h = fd.ops.cast(fd.define_tensor([-1, -1], contiguity=True, dtype=dtype), DataType.Float)
        for _ in range(steps):
            h = fd.ops.sin(h * 1.01 + 0.1)
            h = fd.ops.exp(h) - 1.0
            h = fd.ops.tanh(h * h)
            h = fd.ops.maximum(h, 0.01) + fd.ops.sigmoid(h)
        fd.add_output(fd.ops.cast(h, dtype))
    return fd
