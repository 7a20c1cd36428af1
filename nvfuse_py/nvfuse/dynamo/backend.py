"""The torch.compile backend: Dynamo's graph, with its constant attention
masks dropped where they mask nothing or only what causality would
(attention_masks.py), its attention calls on cuDNN where torch would
run them there (attention_backends.py) and its LM-head losses chunked
(lm_head_losses.py), goes
through AOTAutograd (forward and backward graphs in ATen, decomposed to
ops nvfuse fuses:
decompositions.py), then the backend's FX passes (passes/: input updates,
partitioning, regions) cut each graph into fusible regions run as nvfuse
fusions (region.py, translate.py); everything else stays the ATen call it
was.

    torch.compile(model, backend="nvfuse")
    torch.compile(model, backend=nvfuse.dynamo.backend)
    torch.compile(model, backend="nvfuse", options={"dump": True})
    torch.compile(model, backend="nvfuse", options={"channels_last": True})
    torch.compile(model, backend="nvfuse", mode="reduce-overhead")  # CUDA graphs
"""

import functools

from torch._dynamo.backends.common import aot_autograd

from .attention_backends import attention_on_cudnn
from .attention_masks import drop_constant_masks
from .cuda_graphs import CudaGraphCompilers
from .decompositions import decompositions
from .lm_head_losses import chunk_lm_head_losses
from .pipeline import compile_graph

OPTIONS = {
    "dump": "print each compiled graph's report (also NVFUSE_DUMP=dynamo)",
    "cuda_graphs": "record each compiled graph's launches as CUDA graphs and replay "
    'them (also mode="reduce-overhead")',
    "channels_last": "run convolutions on channels-last tensors, as cuDNN's kernels read "
    'them, instead of converting around each: True, False or "auto" (the default: on '
    "where every convolution is an ungrouped 2-d one on CUDA in a half type, as ResNet's; "
    "docs/torch_compile.md)",
}

# torch.compile's modes, as the options they stand for here.
MODES = {
    "default": {},
    "reduce-overhead": {"cuda_graphs": True},
    "max-autotune": {},
    "max-autotune-no-cudagraphs": {},
}


def _partition_fn():
    try:
        import networkx  # noqa: F401 (the min-cut partitioner needs it)
    except ImportError:
        from torch._functorch.partitioners import default_partition

        return default_partition
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    return min_cut_rematerialization_partition


def _check_options(options):
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        from ..errors import DefinitionError

        known = ", ".join(f"{k} ({v})" for k, v in OPTIONS.items())
        raise DefinitionError(
            f"nvfuse backend: unknown option(s) {', '.join(unknown)}; known: {known}"
        )


def _options_of(options, kwargs):
    options = dict(options or {}, **kwargs)
    mode = options.pop("mode", None) or "default"
    if mode not in MODES:
        from ..errors import DefinitionError

        raise DefinitionError(f"nvfuse backend: unknown mode {mode!r}; known: {', '.join(MODES)}")
    _check_options(options)
    return {**MODES[mode], **options}


def _channels_last_choice(value):
    if value == "auto":
        return value
    if isinstance(value, (bool, int)) and value in (0, 1):
        return bool(value)
    from ..errors import DefinitionError

    raise DefinitionError(
        f'nvfuse backend: option channels_last must be True, False or "auto", got {value!r}'
    )


def backend(gm, example_inputs, options=None, **kwargs):
    """torch.compile's backend="nvfuse": `options` (torch.compile's
    `options=`) or keyword arguments, see OPTIONS; torch.compile's `mode`
    as MODES says."""
    options = _options_of(options, kwargs)
    dump = bool(options.get("dump", False))
    channels_last = _channels_last_choice(options.get("channels_last", "auto"))
    cuda_graphs = bool(options.get("cuda_graphs", False))

    def compile_kind(graph, inputs, kind):
        return compile_graph(
            graph,
            inputs,
            kind,
            dump=dump,
            channels_last=channels_last,
            write_donated=not cuda_graphs,
        )

    if cuda_graphs:
        graphs = CudaGraphCompilers(compile_kind, len(example_inputs))
        forward, backward, inference = graphs.forward, graphs.backward, graphs.inference
    else:
        forward, backward, inference = (
            functools.partial(compile_kind, kind=kind)
            for kind in ("forward", "backward", "inference")
        )

    drop_constant_masks(gm)
    attention_on_cudnn(gm)
    chunk_lm_head_losses(gm)
    return aot_autograd(
        fw_compiler=forward,
        bw_compiler=backward,
        inference_compiler=inference,
        decompositions=decompositions(),
        partition_fn=_partition_fn(),
        keep_inference_input_mutations=True,
    )(gm, example_inputs)
