"""nvfuse.multidevice: shard a FusionDefinition over a mesh of devices.

    import nvfuse
    from nvfuse import FusionDefinition, DataType, ParallelType
    from nvfuse.multidevice import DeviceMesh, shard_tensor

    mesh = DeviceMesh(torch.arange(world_size))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.relu(x)
        fd.add_output(y)
        x.set_device_mesh(mesh)
        x.outer_split(0, world_size)
        x.axis(0).parallelize(ParallelType.mesh_x)
    (local_y,) = fd.execute([shard_tensor(full_x, x, mesh)])

Every process (torchrun --nproc-per-node=N) runs the same script; device
ids in meshes are ranks. See docs/multidevice.md.
"""

from .communicator import init, is_initialized
from .mesh import DeviceMesh
from .sharding import Sharding, shard_tensor, unshard_tensor

__all__ = [
    "DeviceMesh",
    "Sharding",
    "init",
    "is_initialized",
    "shard_tensor",
    "unshard_tensor",
]
