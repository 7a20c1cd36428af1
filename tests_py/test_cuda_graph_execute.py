"""execute(cuda_graph=True): launches recorded once per set of input
tensors and replayed (nvfuse/cuda_graph.py), and random ops under a capture
drawing from torch's graph-safe generator state: every replay draws new
values, the ones a plain call at the same generator state draws."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition, InputError
from nvfuse import cuda_graph as graphs


def add_mul():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], contiguity=True)
        b = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.relu(a + b) * 2.0)
    return fd


def test_cpu_inputs_are_refused_by_name():
    fd = add_mul()
    a = torch.randn(4, 8)
    with pytest.raises(InputError, match="input 0 is a cpu tensor"):
        fd.execute([a, a], cuda_graph=True)
    # The definition still runs plainly.
    torch.testing.assert_close(fd.execute([a, a])[0], torch.relu(a + a) * 2.0)


def test_the_common_call_matches_the_full_path():
    fd = add_mul()
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    first = fd.execute((a, b))[0]  # the full path (a tuple)
    again = fd.execute([a, b])[0]  # the direct one
    torch.testing.assert_close(first, again)
    with pytest.raises(Exception, match="input"):
        fd.execute([a])


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@cuda
def test_replays_read_the_inputs_current_values():
    fd = add_mul()
    a = torch.randn(64, 256, device="cuda")
    b = torch.randn(64, 256, device="cuda")
    first = fd.execute([a, b], cuda_graph=True)[0]  # plain, then captured
    torch.testing.assert_close(first, torch.relu(a + b) * 2.0)
    out = fd.execute([a, b], cuda_graph=True)[0]
    torch.testing.assert_close(out, torch.relu(a + b) * 2.0)
    a.add_(1.0)
    again = fd.execute([a, b], cuda_graph=True)[0]
    assert again.data_ptr() == out.data_ptr()  # the graph's own output
    torch.testing.assert_close(again, torch.relu(a + b) * 2.0)
    assert len(fd._graphs._graphs) == 1


@pytest.mark.gpu
@cuda
def test_new_tensors_capture_new_graphs_up_to_the_bound():
    fd = add_mul()
    fd.cuda_graph = True  # the definition's default
    inputs = [torch.randn(8, 32, device="cuda") for _ in range(graphs.GRAPHS_PER_DEFINITION + 3)]
    for x in inputs:
        torch.testing.assert_close(fd.execute([x, x])[0], torch.relu(x + x) * 2.0)
    assert len(fd._graphs._graphs) == graphs.GRAPHS_PER_DEFINITION
    # A plain call beside the graphs.
    x = inputs[0]
    torch.testing.assert_close(fd.execute([x, x], cuda_graph=False)[0], torch.relu(x + x) * 2.0)


@pytest.mark.gpu
@cuda
def test_a_segmented_fusion_replays_as_one_graph():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        w = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        h = fd.ops.cast(fd.ops.relu(fd.ops.cast(x, DataType.Float)), DataType.BFloat16)
        z = fd.ops.cast(fd.ops.matmul(h, w), DataType.Float)
        fd.add_output(fd.ops.sum(z * z, [1]))
    x = torch.randn(32, 64, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(64, 64, dtype=torch.bfloat16, device="cuda")
    assert len(fd.segment_summary()) == 3
    plain = fd.execute([x, w])[0]
    for _ in range(3):
        graphed = fd.execute([x, w], cuda_graph=True)[0]
        torch.testing.assert_close(graphed, plain)


@pytest.mark.gpu
@cuda
def test_an_in_place_update_applies_on_every_replay():
    with FusionDefinition() as fd:
        p = fd.define_tensor([-1], contiguity=True)
        g = fd.define_tensor([-1], contiguity=True)
        fd.add_output(p - g * 0.5, alias_input=p)
    p = torch.zeros(1000, device="cuda")
    g = torch.ones(1000, device="cuda")
    for _ in range(4):  # one plain call, then three replays
        fd.execute([p, g], cuda_graph=True)
    torch.testing.assert_close(p, torch.full_like(p, -2.0))


def dropout():
    """A random op of a pointwise fusion (the coordinate kernel draws it)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.where(fd.ops.lt(fd.ops.rand_like(x), 0.5), x * 2.0, 0.0))
    return fd


def noisy_row_sums():
    """Random ops next to a reduction (drawn inside the row walk)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        noisy = x + fd.ops.rand_like(x)
        fd.add_output(noisy)
        fd.add_output(fd.ops.sum(noisy, [1]))
    return fd


RANDOM_FUSIONS = [dropout, noisy_row_sums]


@pytest.mark.parametrize("make_fd", RANDOM_FUSIONS)
def test_plain_random_kernels_take_their_keys_by_value(make_fd):
    """The kernel for a launch outside a capture; the one a capture records
    reads torch's graph-safe state (tests_cpp/test_graph_rng.cpp)."""
    code = make_fd().cuda_code_for([torch.empty(64, 512)])
    assert "nvfuse::uint64(args.seed_0)" in code and "graph_rng" not in code


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("make_fd", RANDOM_FUSIONS)
def test_replays_draw_what_plain_calls_draw_at_the_same_generator_state(make_fd):
    fd = make_fd()
    x = torch.randn(256, 1024, device="cuda")
    torch.manual_seed(7)
    plain = [[t.clone() for t in fd.execute([x])] for _ in range(4)]
    torch.manual_seed(7)
    graphed = [[t.clone() for t in fd.execute([x], cuda_graph=True)] for _ in range(4)]
    for want, got in zip(plain, graphed):  # a plain call, then three replays
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
    assert not torch.equal(graphed[1][0], graphed[2][0])  # each replay draws anew
    # and the generator moved on as far as the plain calls moved it
    after_graphs = torch.rand(4, device="cuda")
    torch.manual_seed(7)
    for _ in range(4):
        fd.execute([x])
    torch.testing.assert_close(after_graphs, torch.rand(4, device="cuda"), rtol=0, atol=0)


@pytest.mark.gpu
@cuda
def test_a_capture_by_hand_replays_fresh_random_values():
    fd = dropout()
    x = torch.ones(64, 512, device="cuda")
    fd.execute([x])  # compiles before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = fd.execute([x])
    graph.replay()
    first = outputs[0].clone()
    graph.replay()
    assert not torch.equal(first, outputs[0])
    kept = (outputs[0] != 0).float().mean().item()
    assert 0.45 < kept < 0.55
