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
    """How a pipelined all-gather + GEMM or GEMM + reduce-scatter
    communicates, for every sharded fusion from the next call on:

    - "auto" (the default): the copy engine for every all-gather + GEMM and
      for a GEMM + reduce-scatter of at least 2048 GEMM rows a device, when
      the tensors are on GPUs of one host that read each other's memory
      (asked once per team, a collective); else "nccl";
    - "nccl": c10d's collective per row chunk;
    - "symm_mem": torch's symmetric memory and the copy engine, one device
      per step, so the GEMM keeps every SM (CUDA tensors only).

    NVFUSE_OVERLAP_BACKEND sets it at startup. Anything else is a
    DefinitionError."""
    _C.set_overlap_backend(name)


def overlap_backend():
    """The overlap backend now: "auto", "nccl" or "symm_mem"."""
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
