"""Runs the multi-process tests (tests_py/multidevice) under torchrun on
CPU with Gloo, for 2 and 4 processes: the CI's multi-device coverage."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("processes", [2, 4])
def test_multidevice_suite_under_torchrun(processes, tmp_path):
    env = dict(os.environ)
    env.update(NVFUSE_TEST_DEVICE="cpu", NVFUSE_COMM_TIMEOUT_S="60", OMP_NUM_THREADS="1")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            str(processes),
            "--master-port",
            str(free_port()),
            "--log-dir",
            str(tmp_path / "logs"),
            "--tee",
            "3",
            "-m",
            "pytest",
            str(ROOT / "tests_py" / "multidevice"),
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    summaries = re.findall(r"(\d+) passed", output)
    # Every process reports its own summary, with no failures.
    assert len(summaries) >= processes and all(int(n) >= 10 for n in summaries), output[-3000:]
    assert " failed" not in output
