"""A sharded script under torchrun (CPU, Gloo) exits cleanly every time:
nvfuse destroys the process groups it created before the interpreter tears
torch.distributed down (destroyed later, Gloo's threads abort the process
in some runs)."""

import os
import subprocess
import sys
from pathlib import Path

from test_multidevice_launch import free_port

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import torch
import torch.distributed as dist
import nvfuse.multidevice as md
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh, shard_tensor

md.init()
world = dist.get_world_size()
mesh = DeviceMesh(torch.arange(world))
with FusionDefinition() as fd:
    x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
    y = fd.ops.sum(fd.ops.mul(x, 2.0), dims=[0])
    fd.add_output(y)
    x.set_device_mesh(mesh)
    x.outer_split(0, mesh.size)
    x.axis(0).parallelize(ParallelType.mesh_x)
full = torch.arange(world * 6.0).reshape(world * 2, 3)
(out,) = fd.execute([shard_tensor(full, x, mesh)])
assert torch.allclose(out, (full * 2).sum(0)), out
print("ok", dist.get_rank())
"""


def test_sharded_script_exits_cleanly_every_time(tmp_path):
    script = tmp_path / "sharded_exit.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1", NVFUSE_COMM_TIMEOUT_S="60")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    env["CUDA_VISIBLE_DEVICES"] = ""  # Gloo on CPU tensors
    for run in range(6):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc-per-node",
                "2",
                "--master-port",
                str(free_port()),
                str(script),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"run {run}: exit code {result.returncode}\n{output[-4000:]}"
        assert output.count("ok") == 2, output[-2000:]
