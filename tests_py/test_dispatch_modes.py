"""execute() under a Python dispatch mode (AOTAutograd runs a compiled
graph's first call under one): nvfuse's own computation is not re-dispatched
through the mode, so ops with Python-number operands keep working and give
the same results."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from nvfuse import FusionDefinition


class PassThrough(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_ops_with_python_numbers_run_under_a_dispatch_mode():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        shifted = fd.ops.add(t, 1e-5)
        fd.add_output(fd.ops.where(fd.ops.le(shifted, 0), fd.ops.pow(shifted, 2.0), shifted))
    x = torch.randn(4, 8)
    (want,) = fd.execute([x])
    mode = PassThrough()
    with mode:
        (got,) = fd.execute([x])
    assert torch.equal(got, want)
    shifted = x + 1e-5
    torch.testing.assert_close(want, torch.where(shifted <= 0, shifted.pow(2.0), shifted))
