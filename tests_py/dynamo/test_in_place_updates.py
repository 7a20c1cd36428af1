"""Functionalization's copy_ into graph inputs (passes/in_place_updates.py):
fused into the region that computes the new value when that is safe,
left to ATen otherwise."""

import operator

import pytest
import torch
from torch import nn

import nvfuse.dynamo
from nvfuse.dynamo.passes.in_place_updates import (
    in_place_updates_done,
    is_input_update,
    keep_in_place_updates_safe,
    mark_in_place_updates,
)
from nvfuse.dynamo.passes.partition import propose_regions
from nvfuse.dynamo.support import NvfuseSupport

from .conftest import aten_graph

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _updates_running_stat(stat, x):
    new = stat * 0.9 + x.mean(0) * 0.1
    stat.copy_(new)
    return (x - new).exp()


def test_input_updates_get_a_reader():
    gm = aten_graph(_updates_running_stat, torch.randn(8), torch.randn(4, 8))
    updates = [n for n in gm.graph.nodes if is_input_update(n)]
    assert len(updates) == 1 and not updates[0].users
    assert mark_in_place_updates(gm) == 1
    (marker,) = updates[0].users
    assert marker.target is in_place_updates_done


def test_an_update_joins_the_region_that_computes_it():
    gm = aten_graph(_updates_running_stat, torch.randn(8), torch.randn(4, 8))
    mark_in_place_updates(gm)
    _, partitions = propose_regions(gm, NvfuseSupport())
    assert any(is_input_update(n) for p in partitions for n in p.nodes)


def test_an_update_whose_input_is_read_outside_stays_aten():
    gm = aten_graph(_updates_running_stat, torch.randn(8), torch.randn(4, 8))
    mark_in_place_updates(gm)
    (update,) = [n for n in gm.graph.nodes if is_input_update(n)]
    region_nodes = {n for n in gm.graph.nodes if n.op == "call_function"}
    reader = next(u for u in update.args[0].users if u is not update)
    region_nodes.discard(reader)  # the old value is read outside the region

    class Proposal:
        nodes = dict.fromkeys(region_nodes)

        def remove_node(self, node):
            del self.nodes[node]

    reasons = {}
    (kept,) = keep_in_place_updates_safe([Proposal()], reasons)
    assert update not in kept.nodes
    assert "read outside the region" in reasons[update.name][1]


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_training_updates_running_statistics_in_place(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).to(device)
    eager = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).to(device)
    eager.load_state_dict(model.state_dict())
    running_mean = model[1].running_mean
    compiled = torch.compile(model, backend="nvfuse")
    for _ in range(2):
        x = torch.randn(4, 3, 16, 16, device=device)
        torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)
    assert model[1].running_mean is running_mean  # updated in place
    torch.testing.assert_close(model[1].running_mean, eager[1].running_mean)
    torch.testing.assert_close(model[1].running_var, eager[1].running_var)
    assert model[1].num_batches_tracked.item() == 2
    forward_ops = {op for r in nvfuse.dynamo.reports() for _, ops in r.fusions for op in ops}
    assert "aten.copy_.default" in forward_ops
    assert not any("copy_" in target for r in nvfuse.dynamo.reports() for _, target, _ in r.unfused)


def test_a_graph_with_an_update_reports_the_marker_as_no_op():
    torch.compile(_updates_running_stat, backend="nvfuse")(torch.randn(8), torch.randn(4, 8))
    (report,) = nvfuse.dynamo.reports()
    assert all(operator.getitem is not t for _, t, _ in report.unfused)
    assert report.fused_ops == report.non_gemm_ops
