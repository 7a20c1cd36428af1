"""The fusion cache: an identical definition, written again in a new
FusionDefinition, reuses the cached fusion; a different one does not."""

import torch

from nvfuse import DataType, FusionCache, FusionDefinition


def _define(op="relu", dtype=DataType.Float, scale=2.0):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=dtype)
        fd.add_output(getattr(fd.ops, op)(t * scale))
    return fd


def test_same_definition_twice_reuses_the_cached_fusion():
    before = FusionCache.get().num_fusions()
    first = _define()
    second = _define()
    assert first.id() == second.id()
    assert FusionCache.get().num_fusions() - before <= 1


def test_different_op_gives_a_new_fusion():
    assert _define("relu").id() != _define("sigmoid").id()


def test_different_dtype_gives_a_new_fusion():
    assert _define(dtype=DataType.Float).id() != _define(dtype=DataType.Double).id()


def test_different_constant_gives_a_new_fusion():
    assert _define(scale=2.0).id() != _define(scale=3.0).id()


def test_sizes_do_not_enter_the_cache_key():
    fd = _define()
    a = fd.execute([torch.randn(2, 3)])[0]
    b = fd.execute([torch.randn(7, 11)])[0]
    assert a.shape == (2, 3) and b.shape == (7, 11)
    assert _define().id() == fd.id()


def test_fusion_definition_from_id_executes_the_cached_fusion():
    fd = _define()
    again = FusionDefinition(fd.id())
    x = torch.randn(3, 3)
    torch.testing.assert_close(again.execute([x])[0], torch.relu(x * 2.0))


def test_subclass_with_definition_method_reuses_the_cache():
    class ReluTwice(FusionDefinition):
        def definition(self):
            t = self.define_tensor(shape=[-1, -1], contiguity=True)
            self.add_output(self.ops.relu(t * 2.0))

    fd = ReluTwice()
    x = torch.randn(4, 2)
    torch.testing.assert_close(fd.execute([x])[0], torch.relu(x * 2.0))
    assert fd.id() == _define().id()
