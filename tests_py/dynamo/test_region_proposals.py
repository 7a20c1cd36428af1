"""passes/region_proposals.py gives the partitions torch's
CapabilityBasedPartitioner proposes: the same node lists in the same
order, on small graphs where a merge would make a cycle and on the graphs
of zoo models' training steps (CPU)."""

import pytest
import torch
from torch.fx.node import _get_qualified_name
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes import partition
from nvfuse.dynamo.passes.region_proposals import propose_partitions
from nvfuse.dynamo.support import NvfuseSupport
from nvfuse.dynamo.translate import VIEWS

from .conftest import aten_graph


def _as_names(partitions):
    return [[node.name for node in p.nodes] for p in partitions]


def _partitioner(gm, support):
    return CapabilityBasedPartitioner(
        gm,
        support,
        allows_single_node_partition=False,
        non_compute_ops=[_get_qualified_name(v) for v in VIEWS],
    )


def _both(gm):
    support = NvfuseSupport()
    torch_partitions = _partitioner(gm, support).propose_partitions()
    return _as_names(propose_partitions(_partitioner(gm, support))), _as_names(torch_partitions)


def test_a_merge_through_an_unsupported_op_is_refused_as_torch_refuses_it():
    # a -> mm -> c and a -> b -> c: a with b and c would wait on the GEMM
    # between them, which waits on a; a alone is no region.
    def f(x, w):
        a = x.exp()
        b = a.sin()
        c = (a @ w) + b
        return c.cos() * a

    ours, theirs = _both(aten_graph(f, torch.randn(4, 4), torch.randn(4, 4)))
    assert ours == theirs
    assert ours == [["sin", "add", "cos", "mul"]]


def test_multi_output_ops_keep_their_items_as_torch_keeps_them():
    def f(x):
        a, b = (x * 2).split([4, 4], -1)
        return (a.exp() @ b.t()).relu() + 1

    ours, theirs = _both(aten_graph(f, torch.randn(4, 8)))
    assert ours == theirs and ours


@pytest.mark.parametrize(
    "name, dtype, options",
    [
        ("resnet", torch.bfloat16, {"channels_last": True}),
        ("gpt2", torch.float32, {}),
        ("llama", torch.float32, {}),
    ],
)
def test_zoo_training_graphs_get_torch_s_partitions(name, dtype, options, monkeypatch):
    from workloads.model_zoo import build

    compared = []

    def propose_and_compare(partitioner):
        ours = propose_partitions(partitioner)
        theirs = partitioner.propose_partitions()
        compared.append((_as_names(ours), _as_names(theirs)))
        return ours

    monkeypatch.setattr(partition, "propose_partitions", propose_and_compare)
    torch._dynamo.reset()
    zoo = build(name, "tiny")
    batch = zoo.bench_batch("cpu", dtype, True)
    zoo.step(torch.compile(zoo.model, backend="nvfuse", options=options), batch, True)()
    torch._dynamo.reset()
    assert len(compared) >= 2  # the forward's graph and the backward's
    for ours, theirs in compared:
        assert ours == theirs and ours
