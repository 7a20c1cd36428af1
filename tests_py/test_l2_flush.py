"""The benchmarks' L2 flush (workloads/l2_flush.py): its methods and its
errors. How well it flushes is measured, not tested: see the module
docstring and docs/measurements/l2_flush_evict_last_h100.txt."""

import pytest
import torch


from workloads.l2_flush import make_l2_flush  # noqa: E402


def test_an_unknown_flush_method_is_refused_by_name():
    with pytest.raises(
        ValueError,
        match=r"NVFUSE_L2_FLUSH must be 'read', 'plain-read' or "
        r"'write', got 'flush-harder'",
    ):
        make_l2_flush("flush-harder")


def test_an_unknown_flush_method_from_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv("NVFUSE_L2_FLUSH", "evict")
    with pytest.raises(ValueError, match="got 'evict'"):
        make_l2_flush()


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["read", "plain-read", "write"])
def test_every_flush_method_runs_and_leaves_other_tensors_alone(method):
    kept = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    expected = kept.clone()
    flush = make_l2_flush(method)
    for _ in range(3):
        assert flush() is None  # pytest-benchmark's setup must return None
    torch.cuda.synchronize()
    assert torch.equal(kept, expected)
