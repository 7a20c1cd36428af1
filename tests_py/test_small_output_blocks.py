"""Small outputs of one call share blocks of memory
(runtime/small_output_blocks.h, nvfuse._C.set_shared_small_outputs, on
by default): each CUDA output of at most 16 KiB is carved from a block
allocated once for several, so that a call making many small tensors
(batch norm's statistics) pays the caching allocator once. They share a
storage and no memory; larger outputs, and calls under a CUDA graph
capture, are allocated one by one as before. GPU only: the CPU path
allocates each output."""

import threading

import pytest
import torch

from nvfuse import DataType, FusionDefinition, _C

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _sharing_on():
    before = _C.shared_small_outputs()
    _C.set_shared_small_outputs(True)
    yield
    _C.set_shared_small_outputs(before)


LARGEST_SHARED = 16 * 1024


def _statistics():
    """A batch-norm-like fusion: per-column sum and mean of squares of a
    [rows, columns] input (small outputs), and the input scaled (a large
    one)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        total = fd.ops.sum(x, [0])
        squares = fd.ops.sum(x * x, [0])
        fd.add_output(total)
        fd.add_output(squares)
        fd.add_output(x * 2.0)
        fd.add_output(total + squares)
    return fd


def _ranges_disjoint(tensors):
    spans = sorted((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in tensors)
    return all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))


def _close(got, want):
    # fp32 sums of thousands of terms in another order than torch's
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


def _check(outputs, x):
    total, squares, doubled, both = outputs
    _close(total, x.sum(0))
    _close(squares, (x * x).sum(0))
    _close(doubled, x * 2.0)
    _close(both, x.sum(0) + (x * x).sum(0))


def test_small_outputs_share_a_block_and_no_memory():
    fd = _statistics()
    x = torch.randn(4096, 256, device="cuda")
    for _ in range(3):  # the first call sizes the next calls' block
        outputs = fd.execute([x])
        _check(outputs, x)
    small = [outputs[0], outputs[1], outputs[3]]
    assert len({t.untyped_storage().data_ptr() for t in small}) == 1
    assert _ranges_disjoint(small)
    assert all(t.data_ptr() % 128 == 0 for t in small)
    # The large output has its own allocation.
    assert outputs[2].untyped_storage().data_ptr() != small[0].untyped_storage().data_ptr()


def test_a_kept_small_output_survives_later_calls_and_frees():
    fd = _statistics()
    x = torch.randn(1024, 512, device="cuda")
    kept = fd.execute([x])[0]
    want = x.sum(0)
    for _ in range(5):
        fd.execute([torch.randn_like(x)])
    torch.cuda.synchronize()
    _close(kept, want)
    # Writing one small output leaves its neighbours as they were.
    total, squares, _, both = fd.execute([x])
    total.fill_(0)
    _close(squares, (x * x).sum(0))
    _close(both, x.sum(0) + (x * x).sum(0))


def test_outputs_larger_than_the_limit_are_allocated_alone():
    fd = _statistics()
    x = torch.randn(64, LARGEST_SHARED // 4 + 1, device="cuda")  # each sum just over 16 KiB
    outputs = fd.execute([x])
    _check(outputs, x)
    storages = {t.untyped_storage().data_ptr() for t in outputs}
    assert len(storages) == len(outputs)


def test_a_small_output_updated_in_place_beside_a_shared_input():
    """Two inputs carved from one block (both small outputs of one call)
    are distinct memory: an output aliasing one of them is written in
    place, and the other input is read unchanged."""
    fd_stats = _statistics()
    x = torch.randn(2048, 128, device="cuda")
    total, squares, _, _ = fd_stats.execute([x])
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor([-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(a + b, alias_input=a)
    want = total + squares
    address = total.data_ptr()
    fd.execute([total, squares])
    _close(total, want)
    _close(squares, (x * x).sum(0))
    assert total.data_ptr() == address


def test_calls_under_a_cuda_graph_capture_allocate_each_output():
    fd = _statistics()
    x = torch.randn(1024, 64, device="cuda")
    fd.execute([x])  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fd.execute([x])
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            outputs = fd.execute([x])
    torch.cuda.current_stream().wait_stream(stream)
    storages = {t.untyped_storage().data_ptr() for t in outputs}
    assert len(storages) == len(outputs)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    _check(outputs, x)


def test_a_call_from_a_thread_that_has_not_used_cuda():
    # The autograd engine runs a backward on its own device thread: no CUDA
    # context is current there until something makes it so, and the
    # capture check before carving a block must not need one.
    fd = _statistics()
    x = torch.randn(2048, 64, device="cuda")
    fd.execute([x])
    result = {}

    def call():
        try:
            result["outputs"] = fd.execute([x])
        except Exception as error:  # reported on the test's thread
            result["error"] = error

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    assert "error" not in result, result.get("error")
    _check(result["outputs"], x)


def test_turned_off_each_output_is_allocated_alone():
    _C.set_shared_small_outputs(False)
    fd = _statistics()
    x = torch.randn(1024, 64, device="cuda")
    outputs = fd.execute([x])
    _check(outputs, x)
    assert len({t.untyped_storage().data_ptr() for t in outputs}) == len(outputs)
