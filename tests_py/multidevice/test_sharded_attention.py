"""Sharding through reshape, slice and attention: seed 003's multi-head
attention with heads sharded, the tensor-parallel attention block (a
reshape of the sharded projection into heads and back), and the views that
must gather a sharded axis first. Each process compares its shards with
torch's unsharded result."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh, shard_tensor

BIG = 1 << 40  # a slice end past any extent


def shard_axis(t, axis, mesh):
    t.set_device_mesh(mesh)
    t.outer_split(axis, mesh.size)
    t.axis(axis).parallelize(ParallelType.mesh_x)


def host_program(fd):
    return nvfuse._C.host_program(fd.id())


def tp_definitions():
    """The tensor-parallel benchmark's definitions (benchmarks/multidevice),
    so that what the benchmark times is checked here."""
    from workloads import tp_definitions

    return tp_definitions


# q, k, v as [B, H, S, Dh] from qkv [B, S, H, 3 * Dh], as the benchmark
# splits them.
heads_of = tp_definitions().heads_of


def torch_heads_of(qkv, head_dim):
    return [p.permute(0, 2, 1, 3) for p in qkv.split(head_dim, dim=-1)]


def test_seed_mha_forward_keeps_heads_sharded(world):
    """Seed 003's LoopSplitMHAFwd: qkv [B, S, H, 3E/H] sharded on H; no
    communication at all."""
    d = world.size
    b, s, h, dh = 2, 8, 2 * d, 8
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        qkv = fd.define_tensor((b, s, h, 3 * dh), contiguity=True, dtype=DataType.BFloat16)
        attn, lse, _, _ = fd.ops.sdpfa_fwd(*heads_of(fd, qkv, dh), dropout_p=0.0, is_causal=True)
        out = fd.ops.permute(attn, [0, 2, 1, 3])
        fd.add_output(out)
        fd.add_output(lse)
        shard_axis(qkv, 2, mesh)
    full = world.randn(b, s, h, 3 * dh, seed=40).to(torch.bfloat16)
    out_local, lse_local = fd.execute([shard_tensor(full, qkv, mesh)])
    assert out_local.shape == (b, s, h // d, dh) and lse_local.shape == (b, h // d, s)
    expected = F.scaled_dot_product_attention(*torch_heads_of(full, dh), is_causal=True)
    torch.testing.assert_close(
        out_local, shard_tensor(expected.permute(0, 2, 1, 3), out, mesh), atol=2e-2, rtol=2e-2
    )
    out_sharding, lse_sharding = fd.output_shardings()
    assert out_sharding.mesh_axes == [-1, -1, 0, -1] and lse_sharding.mesh_axes == [-1, 0, -1]
    assert "communicate" not in host_program(fd)


def test_tensor_parallel_attention_block(world):
    """Column-parallel qkv projection (heads outermost in its rows), reshape
    into heads, attention, reshape back, row-parallel output projection:
    one Allreduce."""
    d = world.size
    b, s, h, dh = 2, 8, 2 * d, 8
    e = h * dh
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((b, s, e), contiguity=True, dtype=DataType.BFloat16)
        w_qkv = fd.define_tensor((3 * e, e), contiguity=True, dtype=DataType.BFloat16)
        w_out = fd.define_tensor((e, e), contiguity=True, dtype=DataType.BFloat16)
        qkv = fd.ops.reshape(fd.ops.linear(x, w_qkv), [b, s, h, 3 * dh])
        attn, _, _, _ = fd.ops.sdpfa_fwd(*heads_of(fd, qkv, dh), dropout_p=0.0, is_causal=True)
        merged = fd.ops.reshape(fd.ops.permute(attn, [0, 2, 1, 3]), [b, s, -1])
        fd.add_output(fd.ops.linear(merged, w_out))
        x.set_device_mesh(mesh)
        shard_axis(w_qkv, 0, mesh)
        shard_axis(w_out, 1, mesh)
    xs, wq, wo = (
        world.randn(*shape, seed=50 + i).to(torch.bfloat16) / 4
        for i, shape in enumerate([(b, s, e), (3 * e, e), (e, e)])
    )
    (out_local,) = fd.execute([xs, shard_tensor(wq, w_qkv, mesh), shard_tensor(wo, w_out, mesh)])
    qkv_full = F.linear(xs, wq).reshape(b, s, h, 3 * dh)
    y = F.scaled_dot_product_attention(*torch_heads_of(qkv_full, dh), is_causal=True)
    expected = F.linear(y.permute(0, 2, 1, 3).reshape(b, s, e), wo)
    torch.testing.assert_close(out_local, expected, atol=3e-2, rtol=3e-2)
    program = host_program(fd)
    assert program.count("communicate") == 1 and "Allreduce" in program


def test_reshape_splits_and_merges_a_sharded_axis(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((3, 4 * d * 5), contiguity=True, dtype=DataType.Float)
        split = fd.ops.reshape(x, [3, 4 * d, 5])
        merged = fd.ops.reshape(fd.ops.mul(split, 2.0), [3, -1])
        fd.add_output(split)
        fd.add_output(merged)
        shard_axis(x, 1, mesh)
    full = world.randn(3, 4 * d * 5, seed=60)
    split_local, merged_local = fd.execute([shard_tensor(full, x, mesh)])
    assert split_local.shape == (3, 4, 5)
    torch.testing.assert_close(split_local, shard_tensor(full.reshape(3, 4 * d, 5), split, mesh))
    torch.testing.assert_close(merged_local, shard_tensor(full * 2, merged, mesh))
    assert [sh.mesh_axes for sh in fd.output_shardings()] == [[-1, 0, -1], [-1, 0]]
    assert "communicate" not in host_program(fd)


def test_views_that_cut_a_sharded_axis_gather_it(world):
    """A slice of part of a sharded axis, and a reshape whose leading axis
    the devices do not divide, read the axis whole: an Allgather each."""
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((2 * d, 3), contiguity=True, dtype=DataType.Float)
        y = fd.define_tensor((2, 6 * d), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.slice(x, [1, 0], [2 * d - 1, 3]))
        fd.add_output(fd.ops.reshape(y, [2, 3, 2 * d]))
        shard_axis(x, 0, mesh)
        shard_axis(y, 1, mesh)
    xs, ys = world.randn(2 * d, 3, seed=70), world.randn(2, 6 * d, seed=71)
    cut, reshaped = fd.execute([shard_tensor(xs, x, mesh), shard_tensor(ys, y, mesh)])
    torch.testing.assert_close(cut, xs[1 : 2 * d - 1])
    torch.testing.assert_close(reshaped, ys.reshape(2, 3, 2 * d))
    assert host_program(fd).count("Allgather") == 2


def test_layer_norm_of_sequence_sharded_rows(world):
    """var_mean over the unsharded hidden axis: both outputs follow the
    sharded rows, no communication."""
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((3 * d, 16), contiguity=True, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
        y = fd.ops.mul(fd.ops.sub(x, mean), fd.ops.rsqrt(fd.ops.add(var, 1e-5)))
        fd.add_output(y)
        shard_axis(x, 0, mesh)
    full = world.randn(3 * d, 16, seed=80)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    expected = F.layer_norm(full, (16,), eps=1e-5)
    torch.testing.assert_close(y_local, shard_tensor(expected, y, mesh), atol=1e-5, rtol=1e-5)
    assert "communicate" not in host_program(fd)


def test_layer_norm_over_the_sharded_hidden_axis(world):
    """var_mean over the sharded hidden axis: two sums, each a local sum
    and an Allreduce; the normalized rows stay sharded."""
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((3, 8 * d), contiguity=True, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
        y = fd.ops.mul(fd.ops.sub(x, mean), fd.ops.rsqrt(fd.ops.add(var, 1e-5)))
        fd.add_output(y)
        shard_axis(x, 1, mesh)
    full = world.randn(3, 8 * d, seed=81)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    expected = F.layer_norm(full, (8 * d,), eps=1e-5)
    torch.testing.assert_close(y_local, shard_tensor(expected, y, mesh), atol=1e-5, rtol=1e-5)
    assert host_program(fd).count("Allreduce") == 2


def test_complex_variance_over_a_sharded_axis_is_unsupported(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((2 * d, 4), contiguity=True, dtype=DataType.ComplexFloat)
        var, mean = fd.ops.var_mean(x, [0])
        fd.add_output(var)
        shard_axis(x, 0, mesh)
    full = torch.complex(world.randn(2 * d, 4), world.randn(2 * d, 4, seed=1))
    with pytest.raises(nvfuse.UnsupportedError, match="several outputs"):
        fd.execute([shard_tensor(full, x, mesh)])


def mlp_backward_definition(fd, t, e, mesh, dtype=DataType.Float):
    """The backward of linear(x, w0, b0) -> tanh -> linear(., w1), written
    out: grad_x, grad_w0, grad_b0, grad_w1 from x, the weights, the saved
    pre-activation h and grad_out. With w0 sharded on its rows and w1 on its
    columns, only grad_x needs a collective (an Allreduce)."""
    x = fd.define_tensor((t, e), contiguity=True, dtype=dtype)
    w0 = fd.define_tensor((4 * e, e), contiguity=True, dtype=dtype)
    w1 = fd.define_tensor((e, 4 * e), contiguity=True, dtype=dtype)
    h = fd.define_tensor((t, 4 * e), contiguity=True, dtype=dtype)
    grad_out = fd.define_tensor((t, e), contiguity=True, dtype=dtype)
    g = fd.ops.tanh(h)
    grad_g = fd.ops.matmul(grad_out, w1)
    grad_h = fd.ops.mul(grad_g, fd.ops.sub(1.0, fd.ops.mul(g, g)))
    fd.add_output(fd.ops.matmul(grad_h, w0))  # grad_x
    fd.add_output(fd.ops.matmul(fd.ops.permute(grad_h, [1, 0]), x))  # grad_w0
    fd.add_output(fd.ops.sum(grad_h, [0]))  # grad_b0
    fd.add_output(fd.ops.matmul(fd.ops.permute(grad_out, [1, 0]), g))  # grad_w1
    x.set_device_mesh(mesh)
    grad_out.set_device_mesh(mesh)
    shard_axis(w0, 0, mesh)
    shard_axis(w1, 1, mesh)
    shard_axis(h, 1, mesh)
    return x, w0, w1, h, grad_out


def test_tensor_parallel_mlp_backward(world):
    d = world.size
    t, e = 6, 2 * d
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x, w0, w1, h, grad_out = mlp_backward_definition(fd, t, e, mesh)
    xs, w0s, b0s, w1s, gos = (
        world.randn(*shape, seed=90 + i)
        for i, shape in enumerate([(t, e), (4 * e, e), (4 * e,), (e, 4 * e), (t, e)])
    )
    leaves = [v.clone().requires_grad_() for v in (xs, w0s, b0s, w1s)]
    hs = F.linear(leaves[0], leaves[1], leaves[2])
    F.linear(torch.tanh(hs), leaves[3]).backward(gos)
    outs = fd.execute(
        [
            xs,
            shard_tensor(w0s, w0, mesh),
            shard_tensor(w1s, w1, mesh),
            shard_tensor(hs.detach(), h, mesh),
            gos,
        ]
    )
    shardings = fd.output_shardings()
    assert [s.mesh_axes for s in shardings] == [[-1, -1], [0, -1], [0], [-1, 0]]
    expected = [leaves[0].grad, leaves[1].grad, leaves[2].grad, leaves[3].grad]
    for got, want, sharding in zip(outs, expected, shardings):
        want = want[sharding.local_slices(want.shape, world.rank)]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    program = host_program(fd)
    assert program.count("communicate") == 1 and "Allreduce" in program
    # The weight gradients do not wait for grad_x's Allreduce: they come
    # after it in the program and run while it is in flight.
    steps = [line.split(":")[0].strip() for line in program.splitlines() if line.startswith("  ")]
    assert steps[-2:] == [
        "communicate",
        "compute on DeviceMesh(shape=[%d], devices=%s)" % (d, list(range(d))),
    ], program


def test_attention_backward_with_heads_sharded(world):
    """sdpfa_fwd then sdpfa_bwd on [B, H, S, Dh] sharded on H: every
    gradient stays sharded on H, no communication."""
    d = world.size
    b, h, s, dh = 2, 2 * d, 8, 8
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        q, k, v, grad = (
            fd.define_tensor((b, h, s, dh), contiguity=True, dtype=DataType.BFloat16)
            for _ in range(4)
        )
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=0.0, is_causal=True)
        grads = fd.ops.sdpfa_bwd(grad, q, k, v, out, lse, 0.0, True, seed, offset)
        for g in grads:
            fd.add_output(g)
        for t in (q, k, v, grad):
            shard_axis(t, 1, mesh)
    full = [world.randn(b, h, s, dh, seed=100 + i).to(torch.bfloat16) for i in range(4)]
    local = [shard_tensor(t, handle, mesh) for t, handle in zip(full, (q, k, v, grad))]
    got = fd.execute(local)
    leaves = [t.clone().requires_grad_() for t in full[:3]]
    F.scaled_dot_product_attention(*leaves, is_causal=True).backward(full[3])
    for g, leaf in zip(got, leaves):
        assert g.shape == (b, h // d, s, dh)
        torch.testing.assert_close(
            g,
            leaf.grad[:, world.rank * (h // d) : (world.rank + 1) * (h // d)],
            atol=3e-2,
            rtol=3e-2,
        )
    assert [sh.mesh_axes for sh in fd.output_shardings()] == [[-1, 0, -1, -1]] * 3
    assert "communicate" not in host_program(fd)


def test_cat_and_pad_keep_the_axes_they_do_not_grow(world):
    """RoPE-style rotate-half on heads sharded: slice, neg, cat and pad of
    the head dim keep the head sharding; a cat along the sharded axis
    gathers it."""
    d = world.size
    b, h, dh = 2, 2 * d, 8
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((b, h, dh), contiguity=True, dtype=DataType.Float)
        first = fd.ops.slice(x, [0, 0, 0], [BIG, BIG, dh // 2])
        second = fd.ops.slice(x, [0, 0, dh // 2], [BIG, BIG, dh])
        rotated = fd.ops.cat([fd.ops.neg(second), first], -1)
        fd.add_output(rotated)
        fd.add_output(fd.ops.pad(x, [1, 2]))
        fd.add_output(fd.ops.cat([x, x], 1))
        shard_axis(x, 1, mesh)
    full = world.randn(b, h, dh, seed=110)
    rotated_local, padded_local, doubled = fd.execute([shard_tensor(full, x, mesh)])
    mine = slice(world.rank * (h // d), (world.rank + 1) * (h // d))
    expected = torch.cat([-full[..., dh // 2 :], full[..., : dh // 2]], -1)
    torch.testing.assert_close(rotated_local, expected[:, mine])
    torch.testing.assert_close(padded_local, F.pad(full, [1, 2])[:, mine])
    torch.testing.assert_close(doubled, torch.cat([full, full], 1))
    assert [sh.mesh_axes for sh in fd.output_shardings()] == [
        [-1, 0, -1],
        [-1, 0, -1],
        [-1, -1, -1],
    ]
    assert host_program(fd).count("communicate") == 1


def test_tensor_parallel_attention_training_step(world):
    """The attention block's forward (saving what autograd saves) then its
    backward definition, against torch autograd on the whole block: the
    only communications are the forward's and grad_x's Allreduce."""
    defs = tp_definitions()
    d = world.size
    b, s, h, dh = 2, 8, 2 * d, 8
    e = h * dh
    mesh = DeviceMesh(torch.arange(d))
    fwd, (x, w_qkv, w_out) = defs.attention_forward(b, s, h, dh, torch.bfloat16, d, save=True)
    bwd, handles = defs.attention_backward(b, s, h, dh, torch.bfloat16, d)
    xs, wq, wo, grad = (
        world.randn(*shape, seed=130 + i).to(torch.bfloat16) / 4
        for i, shape in enumerate([(b, s, e), (3 * e, e), (e, e), (b, s, e)])
    )
    wq_local, wo_local = shard_tensor(wq, w_qkv, mesh), shard_tensor(wo, w_out, mesh)
    out, projected, attn, lse, seed, offset = fwd.execute([xs, wq_local, wo_local])
    grad_x, grad_wq, grad_wo = bwd.execute(
        [xs, wq_local, wo_local, projected, attn, lse, seed, offset, grad]
    )

    leaves = [t.clone().requires_grad_() for t in (xs, wq, wo)]
    qkv = F.linear(leaves[0], leaves[1]).reshape(b, s, h, 3 * dh)
    y = F.scaled_dot_product_attention(*torch_heads_of(qkv, dh), is_causal=True)
    expected = F.linear(y.permute(0, 2, 1, 3).reshape(b, s, e), leaves[2])
    expected.backward(grad)
    torch.testing.assert_close(out, expected, atol=3e-2, rtol=3e-2)
    torch.testing.assert_close(grad_x, leaves[0].grad, atol=3e-2, rtol=3e-2)
    bwd_handles = dict(zip(["w_qkv", "w_out"], handles[1:3]))
    torch.testing.assert_close(
        grad_wq, shard_tensor(leaves[1].grad, bwd_handles["w_qkv"], mesh), atol=3e-2, rtol=3e-2
    )
    torch.testing.assert_close(
        grad_wo, shard_tensor(leaves[2].grad, bwd_handles["w_out"], mesh), atol=3e-2, rtol=3e-2
    )
    program = host_program(bwd)
    assert program.count("communicate") == 1 and "Allreduce" in program, program
