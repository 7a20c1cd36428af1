"""select, index_select, gather, take_along_axis, scatter,
index_put_accumulate, embedding_fwd, triu, cumsum, iota and full against
torch, on the CPU reference path and (marked) the GPU."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError, InputError, UnsupportedError
from fusion_helpers import DEVICES, assert_close, make_input, run_fusion


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim, index", [(0, 1), (1, -1), (2, 3)])
def test_select_matches_torch(dim, index, device):
    x = make_input((3, 4, 5), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.select(t, index, dim), [x])
    assert_close(out, x.select(dim, index))


def test_select_with_a_symbolic_index():
    x = torch.randn(3, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        i = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.select(t, i, 1))
    (out,) = fd.execute([x, 2])
    assert_close(out, x[:, 2])
    with pytest.raises(InputError, match="select"):
        fd.execute([x, 9])


def test_select_out_of_range_is_a_definition_error():
    with pytest.raises(DefinitionError, match="out of range"):
        with FusionDefinition() as fd:
            fd.ops.select(fd.define_tensor([3, 4], contiguity=True), 4, 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_matches_torch(dim, index_dtype, device):
    x = make_input((5, 6), torch.bfloat16, device=device)
    index = torch.tensor([4, 0, 0, 2], dtype=index_dtype, device=device)
    (out,), _ = run_fusion(lambda fd, t, i: fd.ops.index_select(t, i, dim), [x, index])
    assert_close(out, x.index_select(dim, index))


def test_index_select_with_a_float_index_is_a_type_error():
    with pytest.raises(DefinitionTypeError, match="Int or Int32"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1, -1], contiguity=True)
            i = fd.define_tensor([-1], contiguity=True, dtype=DataType.Float)
            fd.ops.index_select(t, i, 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1])
def test_gather_matches_torch(dim, device):
    x = make_input((4, 6), torch.float32, device=device)
    index = torch.randint(0, x.shape[dim], (3, 5), device=device)
    (out,), _ = run_fusion(lambda fd, t, i: fd.ops.gather(t, i, dim), [x, index])
    assert_close(out, torch.gather(x, dim, index))


@pytest.mark.parametrize("device", DEVICES)
def test_take_along_axis_broadcasts_like_torch(device):
    """Cross-entropy's pick: log-probabilities at each row's label."""
    logits = make_input((8, 10), torch.float32, device=device)
    labels = torch.randint(0, 10, (8, 1), device=device)

    def build(fd, t, i):
        return fd.ops.take_along_axis(t, i, 1)

    (out,), _ = run_fusion(build, [logits, labels])
    assert_close(out, torch.take_along_dim(logits, labels, 1))
    index = torch.randint(0, 8, (1, 10), device=device)
    (out,), _ = run_fusion(lambda fd, t, i: fd.ops.take_along_axis(t, i, 0), [logits, index])
    assert_close(out, torch.take_along_dim(logits, index, 0))


def test_take_along_axis_with_mismatched_sizes_is_a_definition_error():
    with pytest.raises(DefinitionError, match="differ in size at axis 0"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([4, 5], contiguity=True)
            i = fd.define_tensor([3, 2], contiguity=True, dtype=DataType.Int)
            fd.ops.take_along_axis(t, i, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_matches_torch(device):
    x = make_input((4, 5), torch.float32, device=device)
    src = make_input((4, 5), torch.float32, device=device)
    index = torch.stack([torch.randperm(5, device=device) for _ in range(4)])
    (out,), _ = run_fusion(lambda fd, t, i, s: fd.ops.scatter(t, i, s, 1), [x, index, src])
    assert_close(out, x.scatter(1, index, src))


@pytest.mark.parametrize("device", DEVICES)
def test_index_put_accumulate_adds_duplicates(device):
    acc = make_input((6, 3), torch.float32, device=device)
    value = make_input((5, 3), torch.float32, device=device)
    index = torch.tensor([1, 4, 1, 0, 1], device=device)
    (out,), _ = run_fusion(
        lambda fd, a, i, v: fd.ops.index_put_accumulate(a, i, v), [acc, index, value]
    )
    assert_close(out, acc.index_put((index,), value, accumulate=True))


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_fwd_matches_torch(device):
    weight = make_input((10, 4), torch.bfloat16, device=device)
    ids = torch.randint(0, 10, (2, 3), device=device)

    def build(fd, i, w):
        return fd.ops.embedding_fwd(i, w, None, None, 2.0, False, False)

    (out,), _ = run_fusion(build, [ids, weight])
    assert_close(out, torch.nn.functional.embedding(ids, weight))


def test_embedding_fwd_with_max_norm_is_unsupported():
    with pytest.raises(UnsupportedError, match="max_norm"):
        with FusionDefinition() as fd:
            i = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
            w = fd.define_tensor([-1, -1], contiguity=True)
            fd.ops.embedding_fwd(i, w, None, 1.0, 2.0, False, False)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("diagonal", [0, 1, -2])
def test_triu_matches_torch(diagonal, device):
    x = make_input((2, 5, 6), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.triu(t, diagonal), [x])
    assert_close(out, torch.triu(x, diagonal))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
@pytest.mark.parametrize("dim", [0, -1])
def test_cumsum_matches_torch(dtype, dim, device):
    x = make_input((5, 7), dtype, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.cumsum(t, dim), [x])
    expected = torch.cumsum(x, dim)
    if dtype == torch.bfloat16:
        expected = torch.cumsum(x.float(), dim).bfloat16()
    assert_close(out, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype, start, step",
    [(DataType.Int, None, None), (DataType.Int, 3, -2), (DataType.Float, 0.5, 0.25)],
)
def test_iota_matches_arange(dtype, start, step, device):
    anchor = torch.zeros(1, device=device)  # places the fusion on `device`

    def build(fd, a):
        return fd.ops.iota(7, start, step, dtype)

    (out,), _ = run_fusion(build, [anchor])
    begin = 0 if start is None else start
    stride = 1 if step is None else step
    expected = torch.arange(7, device=device) * stride + begin
    expected = expected.to(torch.int64 if dtype == DataType.Int else torch.float32)
    assert out.device == anchor.device
    assert_close(out, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_full_matches_torch(device):
    anchor = torch.zeros(2, device=device)
    with FusionDefinition() as fd:
        fd.from_pytorch(anchor)
        n = fd.define_scalar(dtype=DataType.Int)
        filled = fd.ops.full([n, 3], 1.5, DataType.BFloat16)
        fd.add_output(filled)
        fd.add_output(fd.ops.full([2], 7, DataType.Int))
    out, ints = fd.execute([anchor, 4])
    assert_close(out, torch.full((4, 3), 1.5, dtype=torch.bfloat16, device=device))
    assert_close(ints, torch.full((2,), 7, device=device))


def test_full_of_a_pure_factory_fusion_runs_on_the_cpu():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.full([2, 2], 0.0, DataType.Float))
    (out,) = fd.execute([])
    assert out.device.type == "cpu" and out.eq(0).all()
