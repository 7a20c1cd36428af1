"""Inner-outer reductions launch their finishing kernel as the programmatic
dependent of the row kernel (runtime/kernel_launch.h, programmatic_launches;
sm_90 and later): its blocks are scheduled as the row kernel's blocks
finish and wait in griddepcontrol.wait for the partials. These GPU tests check that the
handover loses nothing: back to back calls, calls on changing inputs, a
CUDA graph that captures the pair, and the same bits as plain launches
(NVFUSE_PROGRAMMATIC_LAUNCH=0, in a second process: the setting is read
once). Outputs are poisoned (conftest), so a finishing kernel that ran
before its partials were written fails the comparison."""

import os
import subprocess
import sys

import pytest
import torch

from workloads.norm_definitions import CASES, assert_case_close, define_case

pytestmark = pytest.mark.gpu

SHAPES = [(2048, 1600), (8192, 4096)]


def _inputs(rows, width, seed):
    torch.manual_seed(seed)
    return CASES["layer_norm_bwd"].make_inputs(rows, width, torch.bfloat16, "cuda")


@pytest.mark.parametrize("rows,width", SHAPES)
def test_back_to_back_calls_on_changing_inputs_match_torch(rows, width):
    fd = define_case("layer_norm_bwd", torch.bfloat16)
    calls = [_inputs(rows, width, seed) for seed in range(4)]
    results = [fd.execute(inputs) for inputs in calls for _ in range(2)]
    assert "_finish(const Args args)" in fd.last_cuda_code()
    for i, outputs in enumerate(results):
        inputs = calls[i // 2]
        assert_case_close(
            "layer_norm_bwd", outputs, CASES["layer_norm_bwd"].torch_reference(*inputs), rows, width
        )


def test_a_captured_inner_outer_pair_replays():
    rows, width = SHAPES[0]
    fd = define_case("layer_norm_bwd", torch.bfloat16)
    inputs = _inputs(rows, width, 0)
    fd.execute(inputs)  # compiled and warmed outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            captured = fd.execute(inputs)
    for seed in range(1, 4):
        for held, fresh in zip(inputs, _inputs(rows, width, seed)):
            held.copy_(fresh)
        graph.replay()
        torch.cuda.synchronize()
        assert_case_close(
            "layer_norm_bwd",
            captured,
            CASES["layer_norm_bwd"].torch_reference(*inputs),
            rows,
            width,
        )


_SAVE_OUTPUTS = """
import sys, torch
sys.path[:0] = [{tests!r}, {root!r}]
from test_programmatic_launch import _inputs
from workloads.norm_definitions import define_case
fd = define_case("layer_norm_bwd", torch.bfloat16)
torch.save([t.cpu() for t in fd.execute(_inputs(2048, 1600, 0))], {path!r})
"""


def test_programmatic_and_plain_launches_give_the_same_bits(tmp_path):
    """The kernels are deterministic: the launch may only change when the
    finishing kernel starts, never what it computes."""
    outputs = {}
    for setting in ("1", "0"):
        path = str(tmp_path / f"outputs_{setting}.pt")
        env = {**os.environ, "NVFUSE_PROGRAMMATIC_LAUNCH": setting}
        script = _SAVE_OUTPUTS.format(
            tests=os.path.dirname(__file__),
            root=os.path.dirname(os.path.dirname(__file__)),
            path=path,
        )
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=600)
        outputs[setting] = torch.load(path)
    for programmatic, plain in zip(outputs["1"], outputs["0"]):
        assert torch.equal(programmatic, plain)
