"""The runtime program of a fusion cut into parts (src/runtime/runtime_program.h):
built once with the executor, a flat list of steps that read the call's
arguments and numbered value slots, each slot freed after the last step that
reads it. NVFUSE_DUMP=segments prints it. Without a GPU: the program's steps
and frees, and results against torch; on the GPU: a long chain holds only the
intermediates still to be read."""

import pytest
import torch

from fusion_helpers import segments_dump
from nvfuse import FusionDefinition

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _program_dump(fd, inputs):
    text = segments_dump(fd, inputs)
    return text[text.index("runtime program") :]


def _relu_matmul_reuse():
    """h = relu(x) (a kernel, also returned), h @ w (ATen), exp(h @ w) +
    rowsum(h) (a kernel reading h again)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        w = fd.define_tensor([-1, -1], contiguity=True)
        h = fd.ops.relu(x)
        y = fd.ops.matmul(h, w)
        fd.add_output(fd.ops.exp(y) + fd.ops.broadcast(fd.ops.sum(h, [1]), [False, True]))
        fd.add_output(h)
    return fd


def _chain(layers):
    """layers x (matmul (ATen), relu (a kernel))."""
    with FusionDefinition() as fd:
        h = fd.define_tensor([-1, -1], contiguity=True)
        w = fd.define_tensor([-1, -1], contiguity=True)
        for _ in range(layers):
            h = fd.ops.relu(fd.ops.matmul(h, w))
        fd.add_output(h)
    return fd


def test_the_program_reads_slots_and_frees_each_after_its_last_reader():
    fd = _relu_matmul_reuse()
    text = _program_dump(fd, [torch.randn(4, 8), torch.randn(8, 8)])
    assert "0 fused (arg 0) -> %0\n" in text
    assert "1 aten (arg 1, %0) -> %1\n" in text
    # %1 is read for the last time here; %0 is returned, so never freed.
    assert "2 fused (%1, %0) -> %2; free %1\n" in text
    assert "outputs: %2 %0\n" in text


def test_a_chain_frees_every_intermediate_but_the_output():
    layers = 5
    text = _program_dump(_chain(layers), [torch.randn(4, 8), torch.randn(8, 8)])
    steps = [line for line in text.splitlines() if " -> %" in line]
    assert len(steps) == 2 * layers
    assert sum("; free" in line for line in steps) == 2 * layers - 1
    assert "outputs: %9\n" in text


def _returns_its_input():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        w = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.relu(fd.ops.matmul(fd.ops.exp(x), w)))
        fd.add_output(x)
    return fd


def test_an_input_returned_as_an_output_of_a_cut_fusion():
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    # The dump prints when the executor is built: the first call.
    assert "outputs: %2 arg 0\n" in _program_dump(_returns_its_input(), [x, w])
    out, same = _returns_its_input().execute([x, w])
    assert same.data_ptr() == x.data_ptr()
    torch.testing.assert_close(out, torch.relu(x.exp() @ w))


def test_results_match_torch_on_every_call():
    fd = _relu_matmul_reuse()
    for rows in (4, 7, 4):
        x, w = torch.randn(rows, 8), torch.randn(8, 8)
        out, h = fd.execute([x, w])
        torch.testing.assert_close(h, torch.relu(x))
        torch.testing.assert_close(out, torch.exp(h @ w) + h.sum(1, keepdim=True))


@pytest.mark.gpu
@cuda
def test_a_long_chain_holds_only_the_intermediates_still_read():
    layers, n = 8, 2048
    fd = _chain(layers)
    x = torch.randn(n, n, device="cuda") / n
    w = torch.randn(n, n, device="cuda")
    reference = x
    for _ in range(layers):
        reference = torch.relu(reference @ w)
    torch.testing.assert_close(fd.execute([x, w])[0], reference, rtol=1e-3, atol=1e-3)
    del reference
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    baseline = torch.cuda.memory_allocated()
    fd.execute([x, w])
    torch.cuda.synchronize()
    intermediate = n * n * 4
    # The matmul's input and output, the kernel's output, and cuBLAS'
    # workspace; holding every intermediate would be 2 * layers of them.
    assert torch.cuda.max_memory_allocated() - baseline <= 4 * intermediate
