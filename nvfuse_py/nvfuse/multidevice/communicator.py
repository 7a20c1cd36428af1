"""The process's communicator: torch.distributed, bootstrapped from the
launcher's environment, plus the team process groups nvfuse creates.

init() reuses an initialized torch.distributed default group; otherwise it
reads RANK / WORLD_SIZE / LOCAL_RANK (torchrun) or OMPI_COMM_WORLD_RANK /
_SIZE / _LOCAL_RANK (mpirun) and MASTER_ADDR / MASTER_PORT (defaults
localhost:29500) and initializes through a TCP store, with Gloo for CPU
tensors and NCCL for CUDA tensors. NVFUSE_COMM_TIMEOUT_S (default 300) bounds
every collective, so a lost peer becomes an error, not a hang.
"""

import atexit
import datetime
import os

import torch
import torch.distributed as dist

from .. import _C
from ..errors import InputError

# Team groups by sorted ranks, and the (rank, world size, default group)
# the C++ communicator was configured for.
_groups = {}
_configured_for = None
# Whether nvfuse initialized torch.distributed itself (then it destroys the
# default group at exit; a user's own group is left alone).
_owns_default_group = False
_shutdown_registered = False


def _shutdown():
    """At exit, before the interpreter tears torch.distributed down: frees
    the compiled sharded executors and the team groups (they hold c10d
    process groups; destroyed during static destruction instead, Gloo's
    threads abort the process), then the default group nvfuse created."""
    global _configured_for, _owns_default_group
    _C.release_communicator()
    if dist.is_initialized():
        for group in _groups.values():
            if group is not dist.group.WORLD and isinstance(group, dist.ProcessGroup):
                dist.destroy_process_group(group)
    _groups.clear()
    _configured_for = None
    if _owns_default_group and dist.is_initialized():
        dist.destroy_process_group()
    _owns_default_group = False


def _env_int(*names):
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            return int(value)
    return None


def _timeout():
    return datetime.timedelta(seconds=float(os.environ.get("NVFUSE_COMM_TIMEOUT_S", "300")))


def is_initialized():
    return _C.communicator_is_configured() and dist.is_initialized()


def init():
    """Sets up this process's communicator (idempotent; cheap once done, as
    every execute() of a sharded fusion calls it)."""
    global _configured_for, _owns_default_group, _shutdown_registered
    if (
        _configured_for is not None
        and dist.is_initialized()
        and _configured_for[2] == id(dist.group.WORLD)
    ):
        return
    if not dist.is_initialized():
        rank = _env_int("RANK", "OMPI_COMM_WORLD_RANK")
        world_size = _env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE")
        if rank is None or world_size is None:
            raise InputError(
                "this fusion is sharded over a device mesh, but the process was not "
                "started by a multi-process launcher: run it with "
                "`torchrun --nproc-per-node=N script.py` (or mpirun), or initialize "
                "torch.distributed first"
            )
        address = os.environ.get("MASTER_ADDR", "localhost")
        port = os.environ.get("MASTER_PORT", "29500")
        # torchrun's agent may already serve the store: env:// joins it.
        init_method = (
            "env://"
            if "MASTER_ADDR" in os.environ and "RANK" in os.environ
            else f"tcp://{address}:{port}"
        )
        backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
        local_rank = _env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")
        if torch.cuda.is_available() and local_rank is not None:
            torch.cuda.set_device(local_rank % torch.cuda.device_count())
        dist.init_process_group(
            backend=backend,
            init_method=init_method,
            rank=rank,
            world_size=world_size,
            timeout=_timeout(),
        )
        _owns_default_group = True
    rank, world_size = dist.get_rank(), dist.get_world_size()
    local_rank = _env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")
    if local_rank is None:
        local_rank = rank
    key = (rank, world_size, id(dist.group.WORLD))
    if not _C.communicator_is_configured() or _configured_for != key:
        _groups.clear()
        _C.configure_communicator(rank, world_size, local_rank)
        _configured_for = key
    if not _shutdown_registered:
        atexit.register(_shutdown)
        _shutdown_registered = True


def _new_team_group(ranks):
    """Called by the C++ communicator, in the same order in every process:
    the c10d name of a process group over `ranks` (sorted), or "" in a
    process outside it."""
    ranks = tuple(int(r) for r in ranks)
    if ranks not in _groups:
        if len(ranks) == dist.get_world_size():
            group = dist.group.WORLD
        else:
            group = dist.new_group(list(ranks), timeout=_timeout())
        _groups[ranks] = group
    group = _groups[ranks]
    # Every process takes part in creating the group; the others get no
    # group object back, and never post to it.
    return group.group_name if isinstance(group, dist.ProcessGroup) else ""
