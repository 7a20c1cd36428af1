import pytest


@pytest.fixture(autouse=True)
def _fresh(fresh_dynamo):
    """Every test here starts with Dynamo and the reports fresh."""


def aten_graph(fn, *inputs):
    """`fn` traced to an ATen FX graph with meta values, as AOTAutograd
    hands it to the backend (functionalized, decomposed)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from nvfuse.dynamo.decompositions import decompositions

    return make_fx(fn, decomposition_table=decompositions(), tracing_mode="fake")(*inputs)


def fused_regions(gm):
    """ATen graph `gm` partitioned into regions run by nvfuse, as the
    backend does after its rewriting passes: (the graph module, its
    FusedRegions)."""
    from nvfuse.dynamo.passes.in_place_updates import mark_in_place_updates
    from nvfuse.dynamo.passes.partition import partition_regions
    from nvfuse.dynamo.passes.regions import install_regions
    from nvfuse.dynamo.region import FusedRegion
    from nvfuse.dynamo.support import NvfuseSupport

    gm.graph.eliminate_dead_code()
    mark_in_place_updates(gm)
    fused, _ = partition_regions(gm, NvfuseSupport())
    install_regions(fused)
    return fused, [r for r in fused.children() if isinstance(r, FusedRegion)]


def record_definitions(regions):
    """A list that fills, as each of `regions` runs, with (the
    FusionDefinition it runs, its arguments)."""
    seen = []
    for region in regions:
        original = region.forward

        def record(*args, region=region, original=original):
            fd = region.definition_for(args)
            fd._ensure_defined()
            seen.append((fd, list(args)))
            return original(*args)

        region.forward = record
    return seen


def compiled_with_passes(model, seen, *passes):
    """`model` through AOTAutograd with compilers that apply `passes` (each
    called with the graph) in order and run the rewritten graphs by ATen;
    records each graph, forward then backward, in `seen`."""
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def compile_graph(gm, example_inputs):
        for rewrite in passes:
            rewrite(gm)
        seen.append(gm)
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=compile_graph, bw_compiler=compile_graph)
    return torch.compile(model, backend=backend)
