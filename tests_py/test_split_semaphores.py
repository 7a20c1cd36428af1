"""Split reductions (a row, or an outer column group, over several blocks)
count arriving blocks in semaphores that the runtime zeroes once per
(device, stream) and the last block of each group resets
(runtime/split_semaphores.h), and write their partial results into a
workspace that every split kernel on a stream shares. Calls after the
first must find the counters zeroed, calls on two streams must share
neither, kernels of different fusions and sizes take turns in one
workspace, and a CUDA graph must replay them. A counter left wrong makes no block combine the partials, and the
poisoned outputs fail the comparison."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition, _C


def _sum(axis):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [axis]))
    return fd


# (axis, shape): inner rows split over blocks, outer columns split over
# blocks (in groups of 32 partial rows: 200_704 rows of 64 make more than
# one group, not a multiple of 32 of them).
SPLIT_CASES = [
    (1, (4, 1 << 20)),
    (1, (3, 300_000)),
    (0, (2048, 1024)),
    (0, (40_000, 96)),
    (0, (200_704, 64)),
]


def _expected(x, axis):
    return x.float().sum(axis)


@pytest.mark.parametrize("axis,shape", SPLIT_CASES)
def test_split_kernels_reset_their_semaphores(axis, shape):
    """The kernel text: every case here splits, and the last block to
    arrive zeroes its counter."""
    code = _sum(axis).cuda_code_for([torch.randn(*shape, dtype=torch.bfloat16)])
    assert ", split," in code
    # Inner splits: a counter per row block; outer: per column block, one
    # per group of partial rows and one for the groups.
    assert ("arrive_last(counters" if axis == 0 else "arrive_last(args.semaphores") in code
    helper = code[code.index("bool arrive_last(") :]
    assert "atomicExch(counter, 0u)" in helper[: helper.index("\n}\n")]
    compiled = _C.nvrtc_compile(code, "nvfuse_reduction", 90)
    assert compiled["bytes"] > 0


@pytest.mark.gpu
def test_repeated_split_reductions_of_changing_shapes_stay_correct():
    fds = {axis: _sum(axis) for axis in (0, 1)}
    inputs = [
        (axis, torch.randn(*shape, device="cuda").to(torch.bfloat16)) for axis, shape in SPLIT_CASES
    ]
    for _ in range(5):
        for axis, x in inputs:
            (got,) = fds[axis].execute([x])
            torch.testing.assert_close(got, _expected(x, axis), rtol=1e-3, atol=1e-2)


@pytest.mark.gpu
def test_split_reductions_on_two_streams_do_not_share_counters():
    fd = _sum(1)
    xs = [torch.randn(4, 1 << 20, device="cuda").to(torch.bfloat16) for _ in range(2)]
    streams = [torch.cuda.Stream() for _ in range(2)]
    results = [[], []]
    torch.cuda.synchronize()
    for _ in range(20):
        for i, stream in enumerate(streams):
            with torch.cuda.stream(stream):
                results[i].append(fd.execute([xs[i]])[0])
    torch.cuda.synchronize()
    for i in range(2):
        for got in results[i]:
            torch.testing.assert_close(got, _expected(xs[i], 1), rtol=1e-3, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("axis,shape", [SPLIT_CASES[0], SPLIT_CASES[2]])
def test_a_captured_split_reduction_replays_and_eager_calls_still_work(axis, shape):
    fd = _sum(axis)
    x = torch.randn(*shape, device="cuda").to(torch.bfloat16)
    fd.execute([x])  # compiled and warmed outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            (captured,) = fd.execute([x])
    for _ in range(3):
        x.copy_(torch.randn(*shape, device="cuda"))
        graph.replay()
        torch.testing.assert_close(captured, _expected(x, axis), rtol=1e-3, atol=1e-2)
    (eager,) = fd.execute([x])
    torch.testing.assert_close(eager, _expected(x, axis), rtol=1e-3, atol=1e-2)


def _var_mean_outer():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        var, mean = fd.ops.var_mean(fd.ops.cast(x, DataType.Float), [0], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(200_704, 256), (802_816, 64), (6_272, 2048), (50_000, 24)])
def test_outer_variance_split_over_groups_of_partial_rows_matches_torch(shape):
    """A channels-last batch norm's statistics: the rows split over several
    groups of partial rows (or one, for the shortest walk), combined per
    group and then over the groups; every call after the first finds its
    counters reset."""
    fd = _var_mean_outer()
    x = torch.randn(*shape, device="cuda").mul_(3).add_(5).to(torch.bfloat16)
    var, mean = torch.var_mean(x.float(), 0, correction=0)
    for _ in range(3):
        got_var, got_mean = fd.execute([x])
        torch.testing.assert_close(got_mean, mean, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(got_var, var, rtol=1e-4, atol=1e-5)
