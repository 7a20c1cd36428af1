"""Multi-process tests: every process of a torchrun world runs the same
tests in the same order (their collectives must match), and compares its
local shards with the unsharded result computed from the same seeded
tensors. Outside torchrun (WORLD_SIZE unset) they skip;
tests_py/test_multidevice_launch.py runs them under torchrun with Gloo.

    torchrun --nproc-per-node=2 -m pytest tests_py/multidevice -q

NVFUSE_TEST_DEVICE=cpu|cuda picks the tensors' device (default: cuda when
there is a GPU per process, else cpu, i.e. NCCL or Gloo).
"""

import os

import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if "WORLD_SIZE" in os.environ:
        return
    skip = pytest.mark.skip(reason="multi-process test: run under torchrun")
    for item in items:
        if "tests_py/multidevice" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


class World:
    def __init__(self):
        import torch.distributed as dist

        import nvfuse.multidevice as md

        md.init()
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        wanted = os.environ.get("NVFUSE_TEST_DEVICE")
        if wanted is None:
            wanted = (
                "cuda"
                if torch.cuda.is_available() and torch.cuda.device_count() >= self.size
                else "cpu"
            )
        self.device = torch.device(
            f"cuda:{torch.cuda.current_device()}" if wanted == "cuda" else "cpu"
        )

    def randn(self, *shape, seed=0):
        """The same tensor in every process."""
        g = torch.Generator().manual_seed(seed)
        return torch.randn(*shape, generator=g).to(self.device)


@pytest.fixture(scope="session")
def world():
    return World()
