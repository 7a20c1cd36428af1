"""execute(cuda_graph=True): launches recorded once per set of input
tensors and replayed (nvfuse/cuda_graph.py), and random fusions refused
under a capture rather than replaying the same values."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition, InputError, UnsupportedError
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


@pytest.mark.gpu
@cuda
def test_random_fusions_are_refused_under_a_capture():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], contiguity=True)
        fd.add_output(x * fd.ops.rand_like(x))
    x = torch.ones(4096, device="cuda")
    with pytest.raises(UnsupportedError, match="random ops in a CUDA graph"):
        fd.execute([x], cuda_graph=True)
    # A capture by hand is refused the same way, and nothing is left broken.
    fd.execute([x])
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(UnsupportedError, match="random ops in a CUDA graph"):
        with torch.cuda.graph(graph):
            fd.execute([x])
    first, second = fd.execute([x])[0], fd.execute([x])[0]
    assert not torch.equal(first, second)
