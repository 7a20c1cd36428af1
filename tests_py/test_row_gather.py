"""Row gathers in the reduction kernel: one element of an input row at a
per-row index along the reduced axis (cross-entropy's label logit), read
once per row by the kernel that reduces the row, instead of a gather
kernel of its own and views around it. Without a GPU the kernel text is
inspected and compiled by NVRTC and the CPU path is checked against torch;
on a GPU the kernel's results are."""

import pytest
import torch

from nvfuse import _C, DataType, FusionDefinition
from fusion_helpers import DEVICES, make_input


def _kinds(fd):
    return [kind for kind, _ in fd.segment_summary()]


def _cross_entropy(fd, logits, labels, *, take_along_axis=True, squeeze=True):
    """log(sum(exp(x - max))) + max - x[label], in fp32."""
    rank = logits.ndim
    index = fd.ops.broadcast(labels, [False] * (rank - 1) + [True])
    if take_along_axis:
        picked = fd.ops.take_along_axis(logits, index, rank - 1)
    else:
        picked = fd.ops.gather(logits, index, rank - 1)
    picked = fd.ops.cast(picked, DataType.Float)
    x = fd.ops.cast(logits, DataType.Float)
    row_max = fd.ops.max(x, [rank - 1], keepdim=not squeeze)
    shifted = x - (
        row_max if not squeeze else fd.ops.broadcast(row_max, [False] * (rank - 1) + [True])
    )
    log_sum = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [rank - 1], keepdim=not squeeze))
    if squeeze:
        picked = fd.ops.squeeze(picked, [rank - 1])
    return log_sum + row_max - picked


def _expected(logits, labels):
    flat = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).double(), labels.reshape(-1), reduction="none"
    )
    return flat.reshape(labels.shape).float()


def _define(logits, labels, **kwargs):
    with FusionDefinition() as fd:
        fd.add_output(
            _cross_entropy(fd, fd.from_pytorch(logits), fd.from_pytorch(labels), **kwargs)
        )
    return fd


VARIANTS = {
    "take_along_axis": dict(take_along_axis=True, squeeze=True),
    "gather": dict(take_along_axis=False, squeeze=True),
    "keepdim": dict(take_along_axis=True, squeeze=False),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cross_entropy_is_one_kernel_and_matches_torch(variant, device, dtype):
    logits = make_input((37, 300), dtype, device=device) * 3
    labels = torch.randint(0, 300, (37,), device=device)
    fd = _define(logits, labels, **VARIANTS[variant])
    (loss,) = fd.execute([logits, labels])
    expected = _expected(logits.float(), labels)
    if VARIANTS[variant]["squeeze"] is False:
        expected = expected[:, None]
    torch.testing.assert_close(loss, expected.to(loss.device), rtol=1e-4, atol=1e-4)
    assert _kinds(fd) == ["fused"]
    if device == "cuda":
        assert "nvfuse_reduction" in fd.last_cuda_code()


def test_the_kernel_reads_the_label_logit_once_per_row_and_nvrtc_compiles_it():
    logits = make_input((64, 512), torch.bfloat16) * 3
    labels = torch.randint(0, 512, (64,))
    code = _define(logits, labels).cuda_code_for([logits, labels])
    row = next(line for line in code.splitlines() if "take_along_axis(" in line)
    # The source row's element at the label, clamped into the row, before
    # the row's phases.
    assert "nvfuse::index_in_range(nvfuse::int64(t" in row and "args.width" in row
    assert code.index("take_along_axis(") < code.index("// phase 0")
    compiled = _C.nvrtc_compile(code, "nvfuse_reduction", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]


def test_three_dimensional_logits_with_per_token_labels():
    logits = make_input((3, 5, 40), torch.float32) * 3
    labels = torch.randint(0, 40, (3, 5))
    fd = _define(logits, labels)
    (loss,) = fd.execute([logits, labels])
    torch.testing.assert_close(loss, _expected(logits, labels), rtol=1e-5, atol=1e-5)
    assert _kinds(fd) == ["fused"]


def test_a_gather_along_a_kept_axis_is_cut_out():
    """Gathering along the axis the reduction keeps is no row gather: it
    runs as a kernel of its own, and the result still matches torch."""
    x = make_input((6, 10), torch.float32)
    index = torch.randint(0, 6, (1, 10))
    with FusionDefinition() as fd:
        tx, ti = fd.from_pytorch(x), fd.from_pytorch(index)
        picked = fd.ops.take_along_axis(tx, ti, 0)  # [1, 10]
        fd.add_output(fd.ops.sum(tx, [1]) + fd.ops.sum(picked, [1]))
    (out,) = fd.execute([x, index])
    torch.testing.assert_close(out, x.sum(1) + torch.take_along_dim(x, index, 0).sum(1))
    assert "aten" in _kinds(fd)


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 5, 4096])
def test_gpu_row_gather_on_strided_logits(rows):
    """Logits stored column-major (a transposed tensor) and a row count
    that is not a multiple of the block's rows: the gather reads along the
    row with the row's own stride."""
    width = 1000
    logits = (torch.randn(width, rows, device="cuda") * 3).t()
    labels = torch.randint(0, width, (rows,), device="cuda")
    labels[0] = width - 1
    fd = _define(logits, labels)
    (loss,) = fd.execute([logits, labels])
    torch.testing.assert_close(loss, _expected(logits, labels), rtol=1e-4, atol=1e-4)
    assert "nvfuse_reduction" in fd.last_cuda_code()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_cross_entropy_rows_take_the_usual_elements_a_thread(dtype):
    """A row that writes nothing per element (a loss per row) holds the
    usual 16 elements a thread in bf16 as in fp32: twice that measured
    slower since the packed row max (schedule/reductions/row_elements.cpp)."""
    logits = torch.randn(64, 8192).to(dtype)
    labels = torch.randint(0, 8192, (64,))
    code = _define(logits, labels).cuda_code_for([logits, labels])
    params = code[code.index("ReductionParams(") :].split(")", 1)[0]
    assert "persistent" in params
    assert "threads_per_row=512," in params, params
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.parametrize("width", [8191, 32000])
def test_cross_entropy_rows_of_other_widths(width):
    """An odd width takes one bf16 a register; 32000 a cluster."""
    logits = torch.randn(64, width).to(torch.bfloat16)
    labels = torch.randint(0, width, (64,))
    code = _define(logits, labels).cuda_code_for([logits, labels])
    params = code[code.index("ReductionParams(") :].split(")", 1)[0]
    if width == 8191:
        assert "vector_width=1," in params and "groups_per_thread=16," in params, params
    else:
        assert "cluster=" in params and "groups_per_thread=2," in params, params
