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

from .. import _C
from .communicator import init, is_initialized
from .mesh import DeviceMesh
from .sharding import Sharding, shard_tensor, unshard_tensor


def set_overlap_backend(name):
    """How a pipelined all-gather + GEMM gathers its shards, for every
    sharded fusion from the next call on: "nccl" (c10d's all-gather of
    each row chunk, the default) or "symm_mem" (each device publishes its
    shard in torch's symmetric memory and peers read it with the copy
    engine, one source device per step, so the GEMM keeps every SM; CUDA
    tensors only). NVFUSE_OVERLAP_BACKEND sets it at startup. Anything
    else is a DefinitionError."""
    _C.set_overlap_backend(name)


def overlap_backend():
    """The overlap backend now: "nccl" or "symm_mem"."""
    return _C.overlap_backend()


__all__ = [
    "DeviceMesh",
    "Sharding",
    "init",
    "is_initialized",
    "overlap_backend",
    "set_overlap_backend",
    "shard_tensor",
    "unshard_tensor",
]
