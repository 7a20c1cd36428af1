"""The coordinate kernel: slices, pads, cats, selects, gathers, embeddings,
permutes, squeezes, reshapes, triu, full, iota and random values computed inside one
generated kernel with the pointwise work around them. Without a GPU the
generated code is inspected and compiled by NVRTC; on a GPU each case runs
as that kernel and must give the reference evaluator's values (to
rounding: device math functions and fused multiply-adds may differ from
the CPU's in the last place)."""

import re

import pytest
import torch

from nvfuse import _C, DataType, FusionDefinition

BIG = 1 << 40  # a slice end past any extent: clamps to it


def _rope(fd, x, cos, sin):
    half = 8
    x1 = fd.ops.slice(x, [0, 0, 0, 0], [BIG, BIG, BIG, half])
    x2 = fd.ops.slice(x, [0, 0, 0, half], [BIG, BIG, BIG, BIG])
    rotated = fd.ops.cat([fd.ops.neg(x2), x1], -1)
    return x * cos + rotated * sin


def _inputs(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, 16, generator=g)
    idx = torch.randint(0, 5, (7,), generator=g)  # torch rejects negatives
    gidx = torch.randint(0, 5, (2, 3, 5, 4), generator=g)
    weight = torch.randn(10, 6, generator=g)
    tokens = torch.randint(0, 10, (3, 4), generator=g)
    cos = torch.randn(5, 16, generator=g)
    sin = torch.randn(5, 16, generator=g)
    # Rows no vector width divides (a vocabulary of 1,001 words), and a
    # rank-3 space whose lane groups cross the ends of rows and planes.
    odd = torch.randn(40, 1001, generator=g)
    rowstat = torch.randn(40, 1, generator=g)
    labels = torch.randint(0, 1001, (40, 1), generator=g)
    x3 = torch.randn(4, 3, 9, generator=g)
    col3 = torch.randn(4, 1, 9, generator=g)
    row3 = torch.randn(4, 3, 1, generator=g)

    def to(t):
        return t.to(device)

    return dict(
        x=to(x),
        idx=to(idx),
        gidx=to(gidx),
        weight=to(weight),
        tokens=to(tokens),
        cos=to(cos),
        sin=to(sin),
        bf=to(x.bfloat16()),
        odd=to(odd.bfloat16()),
        odd_t=to(odd.bfloat16().t().contiguous().t()),
        rowstat=to(rowstat),
        labels=to(labels),
        x3=to(x3),
        col3=to(col3),
        row3=to(row3),
    )


def _loss_grad(fd, z, stat, labels):
    """Cross-entropy's backward over a 1,001-word vocabulary: the one-hot
    of the labels from an arange, minus the softmax."""
    arange = fd.ops.broadcast(fd.ops.iota(1001, 0, 1, DataType.Int), [True, False])
    one_hot = fd.ops.where(fd.ops.eq(arange, labels), -1.0, 0.0)
    softmax = fd.ops.exp(fd.ops.cast(z, DataType.Float) - stat)
    return fd.ops.cast(one_hot * 0.5 - softmax, DataType.BFloat16)


# name -> (input names, build(fd, *handles) -> output)
def _where_labelled(fd, labels):
    """A loss's use of its labels: 0 where ignored (-100)."""
    return fd.ops.where(fd.ops.ne(labels, -100), labels, 0)


CASES = {
    # A pad below a slice whose start is no multiple of the vector width:
    # the pad's boundary falls inside a group of lanes (a language model's
    # labels shifted by one: pad with -100, drop the first column).
    "pad_under_shifted_slice": (
        ["x"],
        lambda fd, x: (
            fd.ops.reshape(
                fd.ops.slice(fd.ops.pad(x, [0, 1], 7.0), [0, 0, 0, 1], [2, 3, 5, 17]), [480]
            )
            * 2.0
        ),
    ),
    "shifted_labels": (
        ["tokens"],
        lambda fd, t: _where_labelled(
            fd, fd.ops.reshape(fd.ops.slice(fd.ops.pad(t, [0, 1], -100), [0, 1], [3, 5]), [12])
        ),
    ),
    "slice_step": (
        ["x"],
        lambda fd, x: fd.ops.slice(x, [0, 1, -4, 1], [2, 3, BIG, 15], [1, 1, 2, 3]) * 2.0,
    ),
    "pad": (["x"], lambda fd, x: fd.ops.pad(fd.ops.exp(x), [2, -3, 1, 1], 0.5)),
    "cat3": (
        ["x"],
        lambda fd, x: fd.ops.cat(
            [x, fd.ops.neg(x), fd.ops.slice(x, [0, 0, 0, 0], [2, 3, 5, 3])], 3
        ),
    ),
    "cat5": (
        ["x"],
        lambda fd, x: fd.ops.cat(
            [fd.ops.slice(x, [0, 0, 0, 4 * k], [2, 3, 5, 4 * k + 4]) * float(k) for k in range(4)]
            + [fd.ops.exp(x)],
            3,
        ),
    ),
    "cat_empty_part": (
        ["x"],
        lambda fd, x: fd.ops.cat(
            [x, fd.ops.slice(x, [0, 0, 0, 4], [2, 3, 5, 4]), fd.ops.neg(x)], 3
        ),
    ),
    "pad_of_cat": (
        ["x"],
        lambda fd, x: fd.ops.pad(
            fd.ops.cat([x, fd.ops.slice(fd.ops.neg(x), [0, 0, 0, 0], [2, 3, 5, 8])], 3),
            [4, 4, 0, 1],
            -1.0,
        ),
    ),
    # Parts of one tensor whose lanes step differently: no one read.
    "cat_strided_parts": (
        ["x"],
        lambda fd, x: fd.ops.cat(
            [
                fd.ops.slice(x, [0, 0, 0, 0], [2, 3, 5, 16], [1, 1, 1, 2]),
                fd.ops.slice(x, [0, 0, 0, 8], [2, 3, 5, 16]),
            ],
            3,
        ),
    ),
    "cat_two_tensors": (
        ["x", "bf"],
        lambda fd, x, b: fd.ops.cat([fd.ops.exp(x), fd.ops.cast(b, DataType.Float)], 3),
    ),
    "rope": (["x", "cos", "sin"], _rope),
    "rope_bf16": (
        ["bf", "cos", "sin"],
        lambda fd, x, c, s: fd.ops.cast(
            _rope(fd, x, fd.ops.cast(c, DataType.BFloat16), fd.ops.cast(s, DataType.BFloat16)),
            DataType.BFloat16,
        ),
    ),
    "select": (["x"], lambda fd, x: fd.ops.select(x, -2, 2) + 1.0),
    "index_select": (["x", "idx"], lambda fd, x, i: fd.ops.index_select(fd.ops.abs(x), i, 2)),
    "gather": (["x", "gidx"], lambda fd, x, i: fd.ops.gather(x, i, 3)),
    "take_along_axis": (["x", "gidx"], lambda fd, x, i: fd.ops.take_along_axis(x, i, 3) * 3.0),
    "embedding": (["tokens", "weight"], lambda fd, t, w: fd.ops.embedding_fwd(t, w)),
    "permute_add": (
        ["x"],
        lambda fd, x: (
            fd.ops.permute(fd.ops.slice(x, [0, 0, 0, 2], [2, 3, 5, 7]), [3, 0, 2, 1]) + 1.0
        ),
    ),
    "squeeze": (
        ["x"],
        lambda fd, x: fd.ops.squeeze(fd.ops.slice(x, [0, 0, 0, 0], [2, 1, 5, 16]), [1]) * 2.0,
    ),
    "triu": (["x"], lambda fd, x: fd.ops.triu(x * 2.0, 1)),
    "full_iota": (
        ["x"],
        lambda fd, x: (
            fd.ops.slice(x, [0, 0, 0, 0], [1, 1, 1, 16])
            + fd.ops.broadcast_in_dim(fd.ops.iota(16, 3.0, 0.5, DataType.Float), [1, 1, 1, 16], [3])
            * fd.ops.full([1, 1, 1, 16], 2.0, DataType.Float)
        ),
    ),
    "iota_int": (["x"], lambda fd, x: fd.ops.iota(9, 4, -3, DataType.Int)),
    # Reshapes of computed values: lanes that stay on one input row share
    # the index arithmetic; others unravel per lane.
    "reshape_split": (["x"], lambda fd, x: fd.ops.reshape(fd.ops.relu(x), [2, 3, 5, 2, 8]) * 2.0),
    "reshape_merge": (["x"], lambda fd, x: fd.ops.reshape(fd.ops.exp(x), [6, 80]) + 1.0),
    "reshape_odd": (["x"], lambda fd, x: fd.ops.reshape(x * 2.0, [16, 30]) - 1.0),
    "reshape_inferred": (["x"], lambda fd, x: fd.ops.reshape(fd.ops.neg(x), [-1, 16]) * x.ndim),
    "permute_of_reshape": (
        ["x"],
        lambda fd, x: fd.ops.permute(fd.ops.reshape(fd.ops.abs(x), [6, 80]), [1, 0]) + 1.0,
    ),
    "slice_of_reshape": (
        ["x"],
        lambda fd, x: fd.ops.slice(fd.ops.reshape(fd.ops.exp(x), [6, 80]), [0, 3], [6, 67]),
    ),
    # Flat lanes (rows no vector width divides, or pad boundaries that are
    # not multiples of one).
    "flat_loss_grad": (["odd", "rowstat", "labels"], _loss_grad),
    "flat_pad": (["odd"], lambda fd, z: fd.ops.pad(z, [0, 7], 0.0)),
    "flat_pad_transposed": (["odd_t"], lambda fd, z: fd.ops.pad(z, [1, 6], -2.0)),
    "flat_rank3": (
        ["x3", "col3", "row3"],
        lambda fd, x, c, r: fd.ops.pad(x * c + r, [0, 2, 0, 0, 0, 0], 1.0),
    ),
    "flat_uniform": (
        ["odd"],
        lambda fd, z: fd.ops.cast(
            fd.ops.cast(z, DataType.Float)
            * fd.ops.uniform(0.0, 1.0, [40, 1001], rng_seed=3, rng_offset=0),
            DataType.BFloat16,
        ),
    ),
    "flat_slice": (
        ["odd"],
        lambda fd, z: fd.ops.pad(fd.ops.slice(z, [0, 3], [40, 1000]), [3, 9], 0.0),
    ),
}


def _define(name, values):
    input_names, build = CASES[name]
    inputs = [values[n] for n in input_names]
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in inputs]
        fd.add_output(build(fd, *handles))
    return fd, inputs


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_one_coordinate_kernel_that_nvrtc_compiles(name):
    fd, inputs = _define(name, _inputs("cpu"))
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
    code = fd.cuda_code_for(inputs)
    assert "nvfuse_coordinates" in code
    compiled = _C.nvrtc_compile(code, "nvfuse_coordinates", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]


def _group_body(name):
    fd, inputs = _define(name, _inputs("cpu"))
    code = fd.cuda_code_for(inputs)
    return code[code.index("void group(") : code.index("__global__")]


def test_cat_of_one_tensor_reads_it_once_at_each_lanes_part():
    body = _group_body("rope")
    # x is read as is, and once for both halves of the rotation: at the
    # coordinates of the half each lane is in, chosen before one unguarded
    # load (not a predicated load per half). Then each half's ops, and one
    # select picks the lanes' values.
    assert body.count("// load T0") == 2
    first_half = re.search(r"const bool (v\d+) = c3 < v\d+;", body).group(1)
    assert re.search(rf"const Index v\d+ = {first_half} \? \(v\d+ \+ c3\) : \(c3 - v\d+\);", body)
    assert "if (" not in body
    assert re.search(r"\.val\[l\] = v\d+ \? v\d+\.val\[l\] : v\d+\.val\[l\];", body)


@pytest.mark.parametrize("name", ["cat_two_tensors", "cat_strided_parts"])
def test_cat_of_two_reads_reads_each_part_only_in_its_own_range(name):
    body = _group_body(name)
    # Each part's load is predicated on its range; no branch on the
    # coordinate, and one select picks the lanes' values.
    assert body.count("// load T") == 2
    assert re.search(r"const bool (v\d+) = c3 < v\d+;", body)
    assert re.search(r"const bool (v\d+) = c3 >= v\d+;", body)
    # (a vector along the lanes is one predicated load; other reads branch)
    predicated = re.findall(r"= nvfuse::load_read_only_if<\w+>\(.*, v\d+\);", body)
    assert len(predicated) + body.count("if (v") == 2 and "if (c3" not in body
    assert re.search(r"\.val\[l\] = v\d+ \? v\d+\.val\[l\] : v\d+\.val\[l\];", body)


def test_cat_of_many_parts_branches_and_pad_nests_its_guard():
    cat5 = _group_body("cat5")
    assert "if (c3 < " in cat5 and cat5.count("} else if (c3 < ") == 3
    # The pad's predicate and the cat's inside it both guard the cat's loads.
    nested = _group_body("pad_of_cat")
    assert re.search(r"if \(v\d+ && v\d+\) \{|load_read_only_if<\w+>\(.*, v\d+ && v\d+\);", nested)


def test_reshape_lanes_on_one_input_row_share_the_index_arithmetic():
    # [2,3,5,16] -> [2,3,5,2,8]: 4 fp32 lanes never straddle an input row.
    body = _group_body("reshape_split")
    assert "kVec = 4" in _code(*_define("reshape_split", _inputs("cpu")))
    assert re.search(r"const Index v\d+ = .* // T\d+_Float\[.*\] = reshape", body)
    assert "nvfuse::Array<Index, kVec>" not in body
    # 16 and 30 wide rows: lanes share only if they cannot straddle either.
    assert "vector_width=2" in _code(*_define("reshape_odd", _inputs("cpu")))


@pytest.mark.parametrize("name", ["pad_under_shifted_slice", "shifted_labels"])
def test_a_pad_below_a_shifted_slice_narrows_the_lanes_to_its_boundary(name):
    # The slice starts at column 1, so the pad's boundary is at an odd
    # column of the iteration: a group of lanes sharing lane 0's predicate
    # would read the next row for its last lane.
    assert "vector_width=1" in _code(*_define(name, _inputs("cpu")))


def test_a_slice_start_the_lanes_divide_keeps_them_wide():
    x = _inputs("cpu")["x"]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        padded = fd.ops.pad(t, [0, 8], 7.0)
        fd.add_output(fd.ops.slice(padded, [0, 0, 0, 8], [2, 3, 5, 24]) * 2.0)
    assert "vector_width=4" in _code(fd, [x])


@pytest.mark.parametrize("name", ["permute_of_reshape", "slice_of_reshape"])
def test_reshape_lanes_off_its_last_axis_or_shifted_unravel_per_lane(name):
    body = _group_body(name)
    assert re.search(r"nvfuse::Array<Index, kVec> v\d+;  // T\d+_Float\[.*\] = reshape", body)


def test_random_ops_carry_philox_and_a_drawn_seed():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        keep = fd.ops.lt(fd.ops.rand_like(t), 0.9)
        fd.add_output(fd.ops.where(keep, t * (1 / 0.9), 0.0))
    code = fd.cuda_code_for([torch.randn(4, 8)])
    assert "nvfuse::int64 seed_0;" in code and "nvfuse::int64 offset_0;" in code
    # 4 consecutive lanes of fp32 share one Philox block.
    assert "kVec = 4" in code
    assert "nvfuse_philox::unit_floats<kVec>(nvfuse::uint64(args.seed_0)" in code
    assert _C.nvrtc_compile(code, "nvfuse_coordinates", 90)["bytes"] > 0


def test_with_a_reduction_the_gather_runs_in_the_kernel_after_it():
    """Cross-entropy's gather: the reduction kernel does not read operands at
    other coordinates, so the take_along_axis and what follows it run as
    one coordinate kernel after the reductions' kernel
    (segment/reductions_then_coordinates.h)."""
    with FusionDefinition() as fd:
        logits = fd.define_tensor([-1, -1], contiguity=True)
        labels = fd.define_tensor([-1, 1], contiguity=True, dtype=DataType.Int)
        m = fd.ops.max(logits, [1], keepdim=True)
        shifted = logits - m
        lse = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1], keepdim=True))
        picked = fd.ops.take_along_axis(shifted - lse, labels, 1)
        fd.add_output(fd.ops.neg(picked))
    summary = fd.segment_summary()
    assert [kind for kind, _ in summary] == ["fused", "fused"]
    assert "take_along_axis" in summary[1][1] and "sum" in summary[0][1]
    logits = torch.randn(6, 11)
    labels = torch.randint(0, 11, (6, 1))
    (out,) = fd.execute([logits, labels])
    expected = -torch.log_softmax(logits, 1).gather(1, labels)
    torch.testing.assert_close(out, expected)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_case_on_gpu_matches_the_reference_evaluator(name):
    cpu_fd, cpu_inputs = _define(name, _inputs("cpu"))
    (expected,) = cpu_fd.execute(cpu_inputs)
    fd, inputs = _define(name, _inputs("cuda"))
    (out,) = fd.execute(inputs)
    assert "nvfuse_coordinates" in fd.last_cuda_code()
    assert out.is_cuda and out.shape == expected.shape and out.dtype == expected.dtype
    torch.testing.assert_close(out.cpu(), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("offset", [0, 1])
def test_strided_and_misaligned_inputs_are_read_lane_by_lane(offset):
    """Other strides, and a storage offset that breaks 16-byte alignment:
    the vector loads step down to lane-by-lane loads inside the kernel."""
    values = _inputs("cuda")
    storage = torch.empty(values["bf"].numel() + offset, dtype=torch.bfloat16, device="cuda")
    x = storage[offset:].view(2, 5, 3, 16).copy_(values["bf"].transpose(1, 2)).transpose(1, 2)
    values["bf"] = x
    fd, inputs = _define("rope_bf16", values)
    (out,) = fd.execute(inputs)
    assert "kVec = 8" in fd.last_cuda_code()
    cpu_fd, cpu_inputs = _define("rope_bf16", {k: v.cpu() for k, v in values.items()})
    (expected,) = cpu_fd.execute(cpu_inputs)
    torch.testing.assert_close(out.cpu(), expected)


def _code(fd, inputs):
    return fd.cuda_code_for(inputs)


def test_vector_width_follows_dtype_and_boundaries():
    values = _inputs("cpu")
    fd, inputs = _define("rope_bf16", values)
    assert "vector_width=8" in _code(fd, inputs)  # 16-byte bf16 lanes
    fd, inputs = _define("rope", values)
    assert "vector_width=4" in _code(fd, inputs)  # 16-byte fp32 lanes
    # cat boundaries at 16 and 32 along a 35-wide axis: 35 is odd, so 1.
    fd, inputs = _define("cat3", values)
    assert "vector_width=1" in _code(fd, inputs)
    # A pad of 2 before a 16-wide axis: a lane group may share the pad
    # predicate only if it cannot straddle 2 or 18, so 2 lanes along the
    # rows; flat lanes, each testing its own, give all 4.
    with FusionDefinition() as fd:
        t = fd.from_pytorch(values["x"])
        fd.add_output(fd.ops.pad(t, [2, 2], 0.0))
    assert "vector_width=4, block=128, unroll=1, index=int32, aligned" in _code(fd, [values["x"]])
    assert "flat_lanes" in _code(fd, [values["x"]])


@pytest.mark.parametrize(
    "name, width",
    [
        ("flat_loss_grad", 8),
        ("flat_pad", 8),
        ("flat_pad_transposed", 8),
        ("flat_rank3", 4),
        ("flat_slice", 8),
    ],
)
def test_rows_no_vector_divides_run_with_flat_lanes(name, width):
    """The lanes go in row-major order across the ends of rows: the dense
    tensors one aligned vector at the group's position, every other access
    lane by lane at each lane's coordinates (one division for the group)."""
    fd, inputs = _define(name, _inputs("cpu"))
    code = _code(fd, inputs)
    assert f"vector_width={width}," in code and "flat_lanes" in code and ", aligned" in code
    body = _group_code(code)
    assert body.count("nvfuse::fast_div(") == len(inputs[0].shape) - 1
    assert "const Index v" in body and "= g * kVec;" in body  # the output's vector
    assert "vector_ok<kVec>(" not in body
    compiled = _C.nvrtc_compile(code, "nvfuse_coordinates", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]


def test_flat_lanes_need_dense_outputs_and_lanes_free_to_leave_a_row():
    values = _inputs("cpu")
    # A column-major output: not laid out densely over the iteration space.
    with FusionDefinition() as fd:
        z = fd.from_pytorch(values["odd"])
        fd.add_output(fd.ops.pad(z, [0, 7], 0.0), stride_order=[0, 1])
    code = _code(fd, [values["odd"]])
    assert "flat_lanes" not in code and "vector_width=1," in code
    # A cat tests its parts' boundaries once for all lanes.
    with FusionDefinition() as fd:
        z = fd.from_pytorch(values["odd"])
        fd.add_output(fd.ops.cat([z, fd.ops.neg(z)], 1))
    code = _code(fd, [values["odd"]])
    assert "nvfuse_coordinates" in code and "flat_lanes" not in code
    # A misaligned dense input: its vectors are checked one by one.
    misaligned = torch.empty(values["odd"].numel() + 1, dtype=torch.bfloat16)[1:]
    misaligned = misaligned.view(40, 1001).copy_(values["odd"])
    fd, inputs = _define("flat_loss_grad", {**values, "odd": misaligned})
    code = _code(fd, inputs)
    assert "flat_lanes" in code and "dense=[0, 3]" in code and ", aligned" not in code
    assert "vector_ok<kVec>(" in _group_code(code)


@pytest.mark.gpu
def test_flat_lanes_with_a_misaligned_input_match_the_reference():
    values = _inputs("cuda")
    misaligned = torch.empty(values["odd"].numel() + 1, dtype=torch.bfloat16, device="cuda")[1:]
    values["odd"] = misaligned.view(40, 1001).copy_(values["odd"])
    for name in ("flat_pad", "flat_loss_grad"):
        fd, inputs = _define(name, values)
        (out,) = fd.execute(inputs)
        assert "flat_lanes" in fd.last_cuda_code()
        cpu_fd, cpu_inputs = _define(name, {k: v.cpu() for k, v in values.items()})
        (expected,) = cpu_fd.execute(cpu_inputs)
        torch.testing.assert_close(out.cpu(), expected)


def _group_code(code):
    return code[code.index("void group(") :]


def _shifted_slice(device, start):
    """A 32-wide bf16 slice of a 40-wide row from `start` on, doubled."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        fd.add_output(fd.ops.slice(x, [0, start], [BIG, start + 32]) * 2.0)
    x = torch.randn(6, 40, generator=torch.Generator().manual_seed(1)).bfloat16().to(device)
    return fd, [x]


def test_aligned_vectors_drop_the_lane_by_lane_fallback():
    """Aligned tensors and lane shifts of whole vectors: the host checks
    alignment once and the kernel has no per-access fallback (the compiler
    predicated it, paying for it on every access)."""
    values = _inputs("cpu")
    fd, inputs = _define("rope_bf16", values)
    code = _code(fd, inputs)
    assert "kVec = 8" in code and ", aligned" in code
    assert "vector_ok<kVec>(" not in _group_code(code)
    assert "nvfuse::fast_div(rest, args.divider[" in code
    assert _C.nvrtc_compile(code, "nvfuse_coordinates", 90)["bytes"] > 0
    fd, inputs = _shifted_slice("cpu", 8)
    assert ", aligned" in _code(fd, inputs)


def test_dense_tensors_address_from_the_group_index():
    """x and the output laid out row-major over the iteration space: their
    addresses start from the group's linear position (g * kVec), the
    rotated half's shifted by its one moved coordinate; cos and sin (fewer
    axes) keep their strides. x with rows 20 apart is not dense."""
    values = _inputs("cpu")
    fd, inputs = _define("rope_bf16", values)
    code = _code(fd, inputs)
    assert "dense=[0, 3]" in code  # x (input 0) and the output (tensor 3)
    body = _group_code(code)
    assert len(re.findall(r"const Index v\d+ = g \* kVec;", body)) == 2
    assert re.search(r"const Index v\d+ = g \* kVec \+ \(v\d+ - c3\);", body)
    assert re.search(r"c2 \* args\.stride_t1\[0\] \+ c3 \* args\.stride_t1\[1\]", body)
    assert _C.nvrtc_compile(code, "nvfuse_coordinates", 90)["bytes"] > 0
    x = torch.empty(2, 3, 5, 20, dtype=torch.bfloat16)[..., :16]
    fd, inputs = _define("rope_bf16", {**values, "bf": x.copy_(values["bf"])})
    code = _code(fd, inputs)
    assert "dense=[3]" in code
    assert "c0 * args.stride_t0[0] + c1 * args.stride_t0[1]" in _group_code(code)


@pytest.mark.parametrize("why", ["storage_offset", "slice_start", "strides"])
def test_unaligned_vectors_keep_the_checked_fallback(why):
    values = _inputs("cpu")
    if why == "slice_start":
        fd, inputs = _shifted_slice("cpu", 3)
    else:
        if why == "storage_offset":
            x = torch.empty(values["bf"].numel() + 1, dtype=torch.bfloat16)[1:]
            values["bf"] = x.view(values["bf"].shape).copy_(values["bf"])
        else:  # rows 20 elements apart: not whole 8-lane vectors
            x = torch.empty(2, 3, 5, 20, dtype=torch.bfloat16)[..., :16]
            values["bf"] = x.copy_(values["bf"])
        fd, inputs = _define("rope_bf16", values)
    code = _code(fd, inputs)
    assert "kVec = 8" in code and ", aligned" not in code
    assert "vector_ok<kVec>(" in _group_code(code)


@pytest.mark.gpu
@pytest.mark.parametrize("start", [3, 8])
def test_shifted_slices_match_the_cpu(start):
    fd, inputs = _shifted_slice("cuda", start)
    (out,) = fd.execute(inputs)
    assert (", aligned" in fd.last_cuda_code()) == (start % 8 == 0)
    cpu_fd, cpu_inputs = _shifted_slice("cpu", start)
    (expected,) = cpu_fd.execute(cpu_inputs)
    assert torch.equal(out.cpu(), expected)


def _gathered_rows_of_random(device):
    """Rows of a random tensor picked by an index: lanes along a row read
    positions that are not consecutive in the random tensor's numbering
    once the rows are gathered, so they must not share Philox blocks."""
    with FusionDefinition() as fd:
        fd.define_tensor([-1], contiguity=True)  # the anchor input
        idx = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Int)
        r = fd.ops.uniform(0.0, 1.0, [6, 16], rng_seed=3, rng_offset=0)
        fd.add_output(fd.ops.gather(r, idx, 0))
    idx = torch.tensor([[(i * 5 + j) % 6 for j in range(16)] for i in range(4)], device=device)
    return fd, [torch.zeros(1, device=device), idx]


def test_gathered_random_rows_do_not_share_philox_blocks():
    fd, inputs = _gathered_rows_of_random("cpu")
    code = fd.cuda_code_for(inputs)
    assert "nvfuse_philox::block(" not in code[code.index("void group(") :]


@pytest.mark.gpu
def test_gathered_random_rows_match_the_cpu():
    fd, inputs = _gathered_rows_of_random("cuda")
    (out,) = fd.execute(inputs)
    cpu_fd, cpu_inputs = _gathered_rows_of_random("cpu")
    (expected,) = cpu_fd.execute(cpu_inputs)
    assert torch.equal(out.cpu(), expected)


def test_launch_shape_follows_the_coordinate_tuning():
    """128 threads moving 16 bytes of the widest tensor by default: one
    group a thread, whatever the dtypes (bf16 x with fp32 cos and sin: 8
    lanes, 32 bytes of fp32; all bf16: 8 lanes; all fp32: 4);
    set_coordinate_tuning changes it, and a block that is not whole warps is
    refused."""
    values = _inputs("cpu")
    defaults = _C.coordinate_tuning()
    assert defaults == (128, 16, 4)
    fd, inputs = _define("rope_bf16", values)
    assert "block=128, unroll=1" in _code(fd, inputs)
    all_bf16 = {**values, "cos": values["cos"].bfloat16(), "sin": values["sin"].bfloat16()}
    fd, inputs = _define("rope_bf16", all_bf16)
    assert "block=128, unroll=1" in _code(fd, inputs)
    fd, inputs = _define("rope", values)
    assert "block=128, unroll=1" in _code(fd, inputs)
    try:
        _C.set_coordinate_tuning(256, 128)
        fd, inputs = _define("rope_bf16", values)
        assert "block=256, unroll=4" in _code(fd, inputs)
        with pytest.raises(Exception, match="block_size must be a multiple of 32"):
            _C.set_coordinate_tuning(100)
        with pytest.raises(Exception, match="bytes_per_thread must be at least 1"):
            _C.set_coordinate_tuning(128, 0)
    finally:
        _C.set_coordinate_tuning(*defaults)


def _scaled_in_place(dtype):
    """x = x * cos + cat(a, b), x updated in place (a coordinate kernel for
    the cat; each element of x read only where it is written)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1, 16], contiguity=True, dtype=dtype)
        cos = fd.define_tensor([-1, 16], contiguity=True, dtype=dtype)
        a = fd.define_tensor([-1, -1, 8], contiguity=True, dtype=dtype)
        b = fd.define_tensor([-1, -1, 8], contiguity=True, dtype=dtype)
        y = x * fd.ops.broadcast(cos, [True, False, False]) + fd.ops.cat([a, b], -1)
        fd.add_output(fd.ops.cast(y, dtype), alias_input=x)
    return fd


def _scaled_in_place_inputs(device):
    torch.manual_seed(3)
    return [
        torch.randn(64, 300, 16, device=device).bfloat16(),
        torch.randn(300, 16, device=device).bfloat16(),
        torch.randn(64, 300, 8, device=device).bfloat16(),
        torch.randn(64, 300, 8, device=device).bfloat16(),
    ]


def test_inputs_load_read_only_and_reused_ones_stay_in_the_caches():
    """All-bf16 RoPE: q through the read-only path, cos and sin (fewer axes
    than the output, read again for every head) with evict_last; a thread
    whose groups all exist runs them unguarded; NVRTC compiles it."""
    values = _inputs("cpu")
    all_bf16 = {**values, "cos": values["cos"].bfloat16(), "sin": values["sin"].bfloat16()}
    fd, inputs = _define("rope_bf16", all_bf16)
    code = _code(fd, inputs)
    assert code.count("nvfuse::load_read_only<true>(") == 2  # cos, sin
    assert "nvfuse::load_read_only<false>(" in code  # q and its rotated half
    assert "if (first + (kUnroll - 1) * kBlock < groups) {" in code
    compiled = _C.nvrtc_compile(code, "nvfuse_coordinates", 90)
    assert compiled["bytes"] > 0 and "warning" not in compiled["log"], compiled["log"]


def test_an_input_updated_in_place_loads_plainly():
    """Its loads must stay ordered with the kernel's stores into it."""
    code = _scaled_in_place(DataType.BFloat16).cuda_code_for(_scaled_in_place_inputs("cpu"))
    assert "nvfuse_coordinates" in code
    assert code.count("nvfuse::load_read_only<true>(") == 1  # cos
    # a and b, each under its cat part's predicate; x loads plainly
    assert code.count("nvfuse::load_read_only_if<false>(") == 2
    compiled = _C.nvrtc_compile(code, "nvfuse_coordinates", 90)
    assert compiled["bytes"] > 0


@pytest.mark.gpu
def test_an_input_updated_in_place_matches_torch_on_the_gpu():
    for device in ("cpu", "cuda"):
        x, cos, a, b = _scaled_in_place_inputs(device)
        expected = (x.float() * cos.float() + torch.cat([a, b], -1).float()).bfloat16()
        _scaled_in_place(DataType.BFloat16).execute([x, cos, a, b])
        torch.testing.assert_close(x, expected, rtol=1e-2, atol=1e-2)


def _permuted_pad(x):
    """A channels-last image walked as (n, h, w, c) and padded along h and
    w: the lanes run along the image's axis 1, not its last."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        nhwc = fd.ops.permute(t, [0, 2, 3, 1])
        fd.add_output(fd.ops.pad(nhwc, [0, 0, 1, 1, 1, 1], fd.define_scalar(0.0)))
    return fd


def _body(code):
    return code[code.index("void group(") : code.index("__global__")]


def test_lanes_along_a_permuted_axis_load_vectors():
    """Aligned (checked on the host, the channels' stride 1 included): one
    vector load. A storage offset of one element: the vector where the
    kernel finds the address aligned, lane by lane elsewhere."""
    x = torch.randn(2, 16, 5, 6).bfloat16().to(memory_format=torch.channels_last)
    body = _body(_permuted_pad(x).cuda_code_for([x]))
    assert "vector_ok" not in body and "load_read_only_if<true>" in body, body
    storage = torch.empty(x.numel() + 1, dtype=x.dtype)
    shifted = storage[1:].view(2, 5, 6, 16).copy_(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    body = _body(_permuted_pad(shifted).cuda_code_for([shifted]))
    assert re.search(r"vector_ok<kVec>\(args\.t0 \+ v\d+, args\.stride_t0\[1\]\)", body), body
    assert "for (int l = 0; l < kVec; ++l) v" in body  # the fallback, lane by lane


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["channels_last", "contiguous", "misaligned"])
def test_permuted_axis_reads_match_torch(layout):
    """The vector where the permuted axis is adjacent in memory and
    aligned; lane by lane where it is not (an NCHW image, or a storage
    offset of one element)."""
    x = torch.randn(2, 16, 5, 6, device="cuda").bfloat16()
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    elif layout == "misaligned":
        storage = torch.empty(x.numel() + 1, dtype=x.dtype, device="cuda")
        x = storage[1:].view(2, 5, 6, 16).copy_(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    (out,) = _permuted_pad(x).execute([x])
    expected = torch.nn.functional.pad(x.permute(0, 2, 3, 1), [0, 0, 1, 1, 1, 1])
    assert torch.equal(out, expected)


def _windows_of_scaled(x, scale):
    """Two windows of a padded, per-channel-scaled (n, h, w, c) image, as
    a max pool reads them: x * scale under each window's pad."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.from_pytorch(scale)
        scaled = fd.ops.mul(t, fd.ops.broadcast(fd.ops.rsqrt(s), [True, True, True, False]))
        zero = fd.define_scalar(0.0)
        first = fd.ops.pad(scaled, [0, 0, 1, 0, 1, 0], zero)
        second = fd.ops.pad(scaled, [0, 0, 0, 1, 0, 1], zero)
        h, w = x.shape[1], x.shape[2]
        a = fd.ops.slice(first, [0, 0, 0, 0], [BIG, h, w, BIG])
        b = fd.ops.slice(second, [0, 1, 1, 0], [BIG, BIG, BIG, BIG])
        fd.add_output(fd.ops.maximum(a, b))
    return fd


def _expected_windows(x, scale):
    scaled = x.float() * scale.float().rsqrt()
    a = torch.nn.functional.pad(scaled, [0, 0, 1, 0, 1, 0])[:, : x.shape[1], : x.shape[2]]
    b = torch.nn.functional.pad(scaled, [0, 0, 0, 1, 0, 1])[:, 1:, 1:]
    return torch.maximum(a, b)


def test_values_at_the_iteration_coordinates_are_computed_once_outside_pads():
    """The per-channel scale is read at the iteration's own coordinates
    under each pad: one load and one rsqrt serve both windows, with no
    predicate (its every element exists); the image under each pad is
    read shifted, predicated."""
    x = torch.randn(2, 5, 6, 16)
    scale = torch.rand(16) + 0.5
    code = _windows_of_scaled(x, scale).cuda_code_for([x, scale])
    body = code[code.index("void group(") : code.index("__global__")]
    assert body.count("// load T1") == 1, body
    assert body.count("rsqrtf(") == 1, body
    assert body.count("// load T0") == 2, body
    load_scale = body[body.index("// load T1") :].splitlines()[1]
    assert not load_scale.strip().startswith("if ("), load_scale


@pytest.mark.gpu
def test_values_computed_outside_pads_match_torch():
    x = torch.randn(2, 5, 6, 16, device="cuda")
    scale = torch.rand(16, device="cuda") + 0.5
    (out,) = _windows_of_scaled(x, scale).execute([x, scale])
    torch.testing.assert_close(out, _expected_windows(x, scale))


def test_a_cat_part_at_the_iteration_coordinates_stays_guarded():
    """Part 0 of a cat is read at the iteration's own coordinates, but
    those run past its end: its loads stay under the cat's predicate."""
    a = torch.randn(4, 8)
    b = torch.randn(4, 8)
    with FusionDefinition() as fd:
        ta = fd.from_pytorch(a)
        tb = fd.from_pytorch(b)
        fd.add_output(fd.ops.cat([fd.ops.exp(ta), fd.ops.exp(tb)], 1))
    code = fd.cuda_code_for([a, b])
    body = code[code.index("void group(") : code.index("__global__")]
    for tensor in ("T0", "T1"):
        load = body[body.index("// load " + tensor) :].splitlines()[1:3]
        assert "if (" in load[0] or "load_read_only_if<" in load[1], body
