"""CUDA graphs for compiled graphs (the backend's `cuda_graphs` option and
torch.compile's `mode="reduce-overhead"`).

Each compiled forward, backward or inference function is recorded with
torch's CUDA-graph trees, the machinery Inductor's reduce-overhead mode and
Dynamo's `cudagraphs` backend use: the first call runs eagerly (nvfuse
compiles its kernels there), the next records the launches into a graph
on torch's private memory pool, and later calls with the same sizes replay
it. Parameters and buffers are static inputs that are not copied; other
inputs are copied into the graph's buffers. A graph torch cannot record
(CPU tensors, several devices, inputs mutated in place that are not
parameters) runs without a CUDA graph, as its backward does then, and the
skip is logged by torch."""

from torch._dynamo.backends.cudagraphs import (
    check_for_skip,
    find_input_mutations,
    get_device_index,
    get_stack_traces,
)
from torch._inductor import cudagraph_trees
from torch._inductor.cudagraph_utils import (
    BoxedDeviceIndex,
    get_placeholder_info,
    log_cudagraph_skip_and_bump_counter,
)
from torch._inductor.utils import BoxedBool, count_tangents, num_fw_fixed_arguments


class _GraphFacts:
    """What torch's CUDA-graph trees need to know of an ATen graph, read
    before the backend fuses it: inside a region, an input update
    (copy_) is no longer a node of the graph that torch could see."""

    def __init__(self, graph, fixed):
        self.fixed = fixed
        self.skip = check_for_skip(graph, fixed)
        self.device_index = get_device_index(graph) if not self.skip else None
        self.stack_traces = get_stack_traces(graph)
        self.placeholders = get_placeholder_info(graph.graph)
        self.mutated_input_idxs = find_input_mutations(graph.graph)


def _recorded(run, facts, inputs, device_index, is_backward, is_inference):
    recorded = cudagraph_trees.cudagraphify_impl(
        run,
        inputs,
        range(facts.fixed),
        device_index=device_index,
        is_backward=is_backward,
        is_inference=is_inference,
        stack_traces=facts.stack_traces,
        placeholders=facts.placeholders,
        mutated_input_idxs=facts.mutated_input_idxs,
    )
    recorded._boxed_call = True
    return recorded


class CudaGraphCompilers:
    """Wraps the backend's graph compiler (graph module, example inputs ->
    boxed function) so that what it returns is recorded as CUDA graphs.
    One object per torch.compile'd function: its forward and backward
    share the record of whether the forward could be recorded."""

    def __init__(self, compile_graph, num_dynamo_inputs):
        self._compile = compile_graph
        self._num_dynamo_inputs = num_dynamo_inputs
        self._recording = BoxedBool(True)
        self._device_index = BoxedDeviceIndex(None)

    def forward(self, graph, inputs, kind="forward"):
        facts = _GraphFacts(graph, num_fw_fixed_arguments(self._num_dynamo_inputs, len(inputs)))
        run = self._compile(graph, inputs, kind)
        if facts.skip:
            BoxedBool.disable(self._recording)
            log_cudagraph_skip_and_bump_counter(f"skipping cudagraphs due to {facts.skip}")
            return run
        self._device_index.set(facts.device_index)
        return _recorded(
            run,
            facts,
            inputs,
            self._device_index.value,
            is_backward=False,
            is_inference=kind == "inference",
        )

    def inference(self, graph, inputs):
        return self.forward(graph, inputs, kind="inference")

    def backward(self, graph, inputs):
        facts = _GraphFacts(graph, count_tangents(graph))
        run = self._compile(graph, inputs, "backward")
        if not self._recording:
            return run
        if facts.skip:
            log_cudagraph_skip_and_bump_counter(f"skipping cudagraphs due to {facts.skip}")
            return self._unrecorded_backward(run)
        return _recorded(
            run, facts, inputs, facts.device_index, is_backward=True, is_inference=False
        )

    def _unrecorded_backward(self, run):
        # The forward's graph tree expects its backward: tell the tree that
        # it runs (outside a graph) so the forward's outputs stay valid.
        manager = cudagraph_trees.get_manager(
            self._device_index.value or 0, create_if_none_exists=False
        )

        def backward(inputs):
            if manager is not None:
                manager.set_to_running_backward()
            return run(inputs)

        backward._boxed_call = True
        return backward
