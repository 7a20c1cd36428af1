# Raises each kind of nvfuse user error once; used to debug error translation.
import torch
import nvfuse
from nvfuse import FusionDefinition

with FusionDefinition() as fd:
    t = fd.define_tensor(shape=[-1], contiguity=True)
    for call in (lambda: fd.ops.bitwise_and(t, t), lambda: fd.ops.broadcast_in_dim(t, [3, 4], [0, 1])):
        try:
            call()
        except nvfuse.NvfuseError as e:
            print(type(e).__name__, "ok")
    fd.add_output(t)
try:
    fd.execute([torch.ones(2, 2)])
except nvfuse.NvfuseError as e:
    print(type(e).__name__, "ok")
