"""The fusion cache keeps compiled state for at most FusionCache.max()
definitions: the least recently executed beyond it are freed and rebuilt
when executed again, with the same results."""

import pytest
import torch

from nvfuse import DataType, FusionCache, FusionDefinition
from nvfuse.errors import DefinitionError
from fusion_helpers import DEVICES


@pytest.fixture
def bound():
    old = FusionCache.max()
    yield
    FusionCache.set_max(old)


def _scale_fusion(factor):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.mul(t, float(factor)))
    return fd


@pytest.mark.parametrize("device", DEVICES)
def test_least_recently_used_states_are_freed_and_rebuilt(bound, device):
    FusionCache.set_max(3)
    x = torch.arange(4.0, device=device)
    fusions = [_scale_fusion(1000 + k) for k in range(6)]
    for fd in fusions:
        fd.execute([x])
    assert FusionCache.num_compiled() == 3
    for k, fd in enumerate(fusions):  # evicted ones run again, rebuilt
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, x * (1000 + k))
    assert FusionCache.num_compiled() == 3


def test_lowering_the_bound_frees_now(bound):
    FusionCache.set_max(8)
    x = torch.ones(2)
    for k in range(5):
        _scale_fusion(2000 + k).execute([x])
    FusionCache.set_max(2)
    assert FusionCache.num_compiled() == 2


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_a_bound_below_one_is_an_error(bound, bad):
    with pytest.raises(DefinitionError, match="positive int"):
        FusionCache.set_max(bad)


def _chained_size_one_reductions():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[1, 1], contiguity=[None, None], dtype=DataType.Int)
        total = fd.ops.sum(fd.ops.max(fd.ops.cast(t, DataType.Half), [0]), [0])
        fd.add_output(fd.ops.minimum(total, total))
    return fd


def test_states_rebuilt_many_times_give_the_same_results(bound):
    """Every rebuild runs the passes on a fresh clone of the definition, in
    a new heap layout: passes that rewrite chains of ops must not depend on
    where the old exprs were."""
    FusionCache.set_max(1)
    x = torch.tensor([[7]])
    chained = _chained_size_one_reductions()
    other = _scale_fusion(3000)
    for _ in range(200):
        (out,) = chained.execute([x])
        assert out.dtype == torch.float16 and out.item() == 7
        other.execute([torch.ones(2)])
