"""execute(..., cuda_graph=True): a fusion's launches recorded once as a CUDA
graph and replayed, so that a cached call costs one graph launch however
many kernels and ATen calls the fusion makes.

A graph reads its inputs at the addresses it was captured with (their
values at the time of each call: updating an input in place is seen) and
writes its outputs into tensors of its own, so a graph serves one set of
input tensors (addresses, sizes, strides, dtypes) and the Python numbers it
was captured with. A call whose inputs differ in any of these captures a new
graph; each definition keeps the GRAPHS_PER_DEFINITION most recently used.
The first call with new inputs runs plainly, then captures; from the
second on, a call returns the graph's output tensors, which the next call
with the same inputs replays into, as torch's own CUDA graphs do (clone
what must outlive it).
"""

from collections import OrderedDict

import torch

from .errors import InputError, NvfuseError, UnsupportedError

GRAPHS_PER_DEFINITION = 8


def _key(inputs):
    # Device pointers are unique across devices (unified addressing), so
    # the address names the device too.
    return tuple(
        [
            (value.data_ptr(), value.shape, value.stride(), value.dtype)
            if isinstance(value, torch.Tensor)
            else (type(value), value)
            for value in inputs
        ]
    )


def _check_cuda(inputs):
    for i, value in enumerate(inputs):
        if isinstance(value, torch.Tensor) and not value.is_cuda:
            raise InputError(
                f"execute(cuda_graph=True): input {i} is a {value.device} tensor; "
                "a CUDA graph reads CUDA tensors only"
            )


class FusionGraphs:
    """The CUDA graphs of one definition, by input key (see the module)."""

    def __init__(self, run):
        self._run = run  # (inputs, cuda_device) -> outputs: the plain execute
        self._graphs = OrderedDict()

    def execute(self, inputs, cuda_device):
        key = (cuda_device, _key(inputs))
        entry = self._graphs.get(key)
        if entry is not None:
            self._graphs.move_to_end(key)
            graph, outputs = entry
            graph.replay()
            return list(outputs)
        _check_cuda(inputs)
        # This call's work runs plainly (compiling and loading every kernel
        # before the capture, which records without running anything), so
        # that an in-place update happens once per call, the first included.
        outputs = self._run(inputs, cuda_device)
        self._graphs[key] = self._capture(inputs, cuda_device)
        if len(self._graphs) > GRAPHS_PER_DEFINITION:
            self._graphs.popitem(last=False)
        return outputs

    def _capture(self, inputs, cuda_device):
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                outputs = self._run(inputs, cuda_device)
        except NvfuseError:  # nvfuse's own errors (RuntimeErrors too) as they are
            raise
        except RuntimeError as error:
            raise UnsupportedError(
                f"execute(cuda_graph=True): the fusion could not be captured: {error}"
            ) from None
        return graph, tuple(outputs)

    def clear(self):
        self._graphs.clear()
