"""topk and argsort (the predecessor's signatures, as Lightning Thunder calls
them) against torch, on the CPU reference path and (marked) the GPU: alone,
between kernels, with a symbolic k, printed and re-run as segments."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError, InputError
from fusion_helpers import DEVICES, assert_close, run_fusion


def _distinct(shape, dtype, device):
    """Values without ties, so that the indices torch picks are the only
    right ones."""
    count = 1
    for n in shape:
        count *= n
    values = torch.randperm(count, device=device).reshape(shape)
    if dtype.is_floating_point:
        return (values.to(torch.float64) / 8 - count / 16).to(dtype)
    return (values - count // 2).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("dim, largest", [(-1, True), (0, False), (1, True)])
def test_topk_matches_torch(dtype, dim, largest, device):
    x = _distinct((6, 40), dtype, device)
    (values, indices), _ = run_fusion(
        lambda fd, t: fd.ops.topk(t, 5, dim, largest=largest, sorted=True), [x]
    )
    want_values, want_indices = torch.topk(x, 5, dim, largest=largest, sorted=True)
    assert_close(values, want_values)
    assert indices.dtype == torch.int64
    assert torch.equal(indices, want_indices)


@pytest.mark.parametrize("device", DEVICES)
def test_unsorted_topk_picks_the_same_elements(device):
    x = _distinct((4, 300), torch.float32, device)
    (values, indices), _ = run_fusion(lambda fd, t: fd.ops.topk(t, 17), [x])
    want = torch.topk(x, 17).values
    assert_close(values.sort(-1).values, want.sort(-1).values)
    assert torch.equal(torch.take_along_dim(x, indices, -1), values)


@pytest.mark.parametrize("device", DEVICES)
def test_topk_between_kernels(device):
    x = _distinct((8, 64), torch.float32, device)

    def build(fd, t):
        values, indices = fd.ops.topk(fd.ops.mul(t, 2.0), 3, 1, True, True)
        return fd.ops.add(values, 1.0), fd.ops.mul(indices, 10)

    (values, scaled), fd = run_fusion(build, [x])
    want_values, want_indices = torch.topk(x * 2.0, 3, 1)
    assert_close(values, want_values + 1.0)
    assert torch.equal(scaled, want_indices * 10)
    assert ("aten", ["topk"]) in fd.segment_summary()


@pytest.mark.parametrize("device", DEVICES)
def test_topk_with_a_symbolic_k(device):
    x = _distinct((5, 9), torch.float32, device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        k = fd.define_scalar(dtype=DataType.Int)
        values, indices = fd.ops.topk(t, k, dim=-1, largest=False, sorted=True)
        fd.add_output(values)
        fd.add_output(indices)
    for count in (1, 4, 9):
        values, indices = fd.execute([x, count])
        want = torch.topk(x, count, largest=False, sorted=True)
        assert_close(values, want.values)
        assert torch.equal(indices, want.indices)
    with pytest.raises(InputError, match="topk"):
        fd.execute([x, 10])


def test_topk_of_k_larger_than_the_axis_is_a_definition_error():
    with pytest.raises(DefinitionError, match="topk: k is 7"):
        with FusionDefinition() as fd:
            fd.ops.topk(fd.define_tensor([3, 6], contiguity=True), 7)


@pytest.mark.parametrize("dtype", [DataType.Bool, DataType.ComplexFloat])
def test_topk_and_argsort_of_unordered_dtypes_are_type_errors(dtype):
    for sort in (lambda fd, t: fd.ops.topk(t, 1), lambda fd, t: fd.ops.argsort(t, 0)):
        with pytest.raises(DefinitionTypeError, match="real or integer"):
            with FusionDefinition() as fd:
                sort(fd, fd.define_tensor([-1, -1], contiguity=True, dtype=dtype))


def test_topk_with_a_float_k_is_a_type_error():
    with pytest.raises(DefinitionTypeError, match="k must be an integer"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1], contiguity=True)
            fd.ops.topk(t, fd.define_scalar(2.0, dtype=DataType.Double))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim, descending", [(0, False), (-1, True)])
def test_stable_argsort_matches_torch_with_ties(dim, descending, device):
    x = torch.randint(0, 4, (7, 33), device=device).to(torch.float16)
    (out,), _ = run_fusion(
        lambda fd, t: fd.ops.argsort(t, dim, descending=descending, stable=True), [x]
    )
    assert out.dtype == torch.int64
    assert torch.equal(out, torch.argsort(x, dim=dim, descending=descending, stable=True))


@pytest.mark.parametrize("device", DEVICES)
def test_argsort_of_an_expanded_input(device):
    row = _distinct((1, 12), torch.float32, device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(row)
        wide = fd.ops.expand(t, [5, 12])
        fd.add_output(fd.ops.argsort(fd.ops.neg(wide), 1, descending=False))
    (out,) = fd.execute([row])
    assert torch.equal(out, torch.argsort(-row.expand(5, 12), dim=1))


def test_topk_and_argsort_print_and_run_as_segments():
    x = _distinct((4, 10), torch.float32, "cpu")

    def build(fd, t):
        values, indices = fd.ops.topk(t, 2, 0, largest=False, sorted=True)
        return values, indices, fd.ops.argsort(fd.ops.abs(t), 1, True, False)

    (values, indices, order), fd = run_fusion(build, [x])
    assert "fd.ops.topk(T0, k=S1, dim=0, largest=False, sorted=True)" in fd.repro_script()
    assert "fd.ops.argsort(" in repr(fd)
    printed = "\n".join(s.repro_script() for s in fd.segment([x]))
    assert "fd.ops.topk(" in printed and "fd.ops.argsort(" in printed
    assert torch.equal(order, torch.argsort(x.abs(), 1, descending=True))
    assert torch.equal(indices, torch.topk(x, 2, 0, largest=False).indices)
