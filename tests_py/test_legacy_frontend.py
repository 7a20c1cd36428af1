"""The predecessor's frontend calls that clients make (Thunder's nvFuser
executor, nvFuser-style test helpers), written from its specification: each
exists with the same names, keywords and results. CPU unless marked."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition, NvfuseError


def _devices():
    return ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


# -- module functions --------------------------------------------------------


def test_version_reports_the_api_level_and_compares_as_a_version():
    v = nvfuse.version()
    assert v.startswith(nvfuse.NVFUSER_API_LEVEL + "+nvfuse.")
    assert v.endswith(nvfuse.__version__)
    assert v >= "0.2.10" and v > "0.2.9" and v < "0.2.28"
    assert v == nvfuse.NVFUSER_API_LEVEL


def test_version_orders_like_looseversion_in_thunder_checks():
    looseversion = pytest.importorskip("looseversion")
    v = looseversion.LooseVersion(nvfuse.version())
    assert looseversion.LooseVersion("0.2.23") <= v < looseversion.LooseVersion("0.2.28")


@pytest.mark.parametrize(
    "sizes, strides, contiguity, stride_order",
    [
        ((2, 3, 4), (12, 4, 1), [True, True, True], [2, 1, 0]),
        ((2, 3, 4), (12, 1, 3), [True, True, True], [2, 0, 1]),
        ((1, 2, 3), (6, 3, 1), [None, True, True], [2, 1, 0]),
    ],
)
def test_compute_tensor_descriptor_gives_what_define_tensor_takes(
    sizes, strides, contiguity, stride_order
):
    assert nvfuse.compute_tensor_descriptor(sizes, strides) == (contiguity, stride_order)


def test_compute_contiguity_marks_dense_gapped_and_broadcast_axes():
    assert nvfuse.compute_contiguity((2, 3, 4), (12, 4, 1)) == [True, True, True]
    assert nvfuse.compute_contiguity((2, 3, 4), (24, 8, 1)) == [True, False, True]
    assert nvfuse.compute_contiguity((2, 1, 4), (4, 4, 1)) == [True, None, True]
    assert nvfuse.compute_contiguity((2, 3), (0, 1)) == [None, True]


def test_compute_descriptor_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="2 sizes but 1 strides"):
        nvfuse.compute_tensor_descriptor((2, 3), (1,))


def test_clone_records_the_same_definition_into_another():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.relu(t * 2.0))
    other = FusionDefinition()
    with other:
        nvfuse.clone(fd, other)
    x = torch.randn(3, 4)
    torch.testing.assert_close(other.execute([x])[0], torch.relu(x * 2.0))
    assert other.id() == fd.id()  # the same records: the same cached fusion


# -- defining ----------------------------------------------------------------


def test_define_scalar_given_a_dtype_alone_is_a_symbolic_input():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], contiguity=True)
        s = fd.define_scalar(DataType.Int)
        fd.add_output(t * s)
    torch.testing.assert_close(fd.execute([torch.ones(3), 4])[0], torch.full((3,), 4.0))


def test_torch_dtypes_are_accepted_wherever_a_datatype_is():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], contiguity=True, dtype=torch.float32)
        s = fd.define_scalar(2, dtype=torch.int64)
        fd.add_output(fd.ops.cast(t * s, torch.bfloat16))
    (out,) = fd.execute([torch.ones(3)])
    assert out.dtype == torch.bfloat16


def test_uint64_exists_and_refuses_promotion_as_torch_does():
    assert nvfuse.pytorch_utils.torch_dtype_to_nvfuser_dtype(torch.uint64) == DataType.UInt64
    with pytest.raises(NvfuseError, match="not supported"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([-1], contiguity=True, dtype=DataType.UInt64)
            b = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
            fd.add_output(a + b)


def test_add_output_takes_stride_order_positionally():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(t + 1.0, [0, 1])
    (out,) = fd.execute([torch.randn(3, 4)])
    assert out.stride() == (1, 3)


@pytest.mark.parametrize("device", _devices())
def test_sizes_from_a_tensor_build_shapes(device):
    """Thunder's cross-entropy spells shapes with t.shape()[-1] and t.size(i)."""
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        row = fd.define_tensor([-1], contiguity=True)
        shape = t.shape()
        assert shape.size == 2 and len(shape) == 2
        wide = fd.ops.broadcast_in_dim(row, shape=[t.size(0), shape[-1]], broadcast_dims=[1])
        fd.add_output(t + wide)
        fd.add_output(fd.ops.reshape(t, new_shape=[fd.ops.at(shape, 0) * shape[1]]))
    x, r = torch.randn(3, 5, device=device), torch.randn(5, device=device)
    out, flat = fd.execute([x, r])
    torch.testing.assert_close(out, x + r)
    torch.testing.assert_close(flat, x.reshape(15))


def test_tensor_sizes_is_a_list_of_scalars():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        sizes = fd.ops.tensor_sizes(t)
        fd.add_output(fd.ops.full(sizes, 1.5, DataType.Float))
    torch.testing.assert_close(fd.execute([torch.randn(2, 7)])[0], torch.full((2, 7), 1.5))


@pytest.mark.parametrize("device", _devices())
def test_stride_order_op_lays_out_an_output(device):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1, -1], contiguity=True)
        fd.add_output(fd.ops.stride_order(t * 2.0, [0, 1, 2]))
    x = torch.randn(2, 3, 4, device=device)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x * 2.0)
    assert out.stride() == (1, 2, 6)


def test_stride_order_rejects_a_non_permutation():
    with pytest.raises(NvfuseError, match="permutation"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1, -1], contiguity=True)
            fd.ops.stride_order(t, [0, 0])


# -- executing ---------------------------------------------------------------


def _relu_fd():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.relu(t))
    return fd


def test_execute_takes_every_predecessor_keyword():
    fd = _relu_fd()
    x = torch.randn(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            (out,) = fd.execute(
                [x],
                device=None,
                override_user_schedule=False,
                capture_debug_output=False,
                print_repro=False,
                profile=False,
                save_repro_inputs=False,
                _enable_options=["id_model"],
                _disable_options=["some_option_name"],
            )
    torch.testing.assert_close(out, torch.relu(x))
    messages = [str(w.message) for w in caught]
    # each unknown option is reported once per process, never an error
    assert sum("id_model" in m for m in messages) <= 1
    assert sum("some_option_name" in m for m in messages) <= 1


def test_capture_debug_output_keeps_the_dumps_of_the_call():
    fd = _relu_fd()
    fd.execute([torch.randn(2, 3)], capture_debug_output=True)
    assert isinstance(fd.debug_output(), str)
    fd.execute([torch.randn(2, 3)])
    assert fd.debug_output() is None


@pytest.mark.parametrize("device", _devices())
def test_profile_reports_the_call(device):
    fd = _relu_fd()
    x = torch.randn(64, 64, device=device)
    # The first call may also run the fusion on ATen while its kernel
    # compiles (docs/api.md: profile a later call).
    fd.execute([x])
    fd.execute([x], profile=True)
    profile = fd.profile()
    assert profile.fusion_id == fd.id() and profile.segments == 1
    assert profile.host_time_ms > 0
    if device == "cuda":
        # Every kernel of the call is listed: with NVFUSE_POISON_OUTPUTS=1
        # (the GPU tests' conftest), the fill that poisons the output first.
        names = [k.name for k in profile.kernel_profiles]
        assert names[-1].startswith("nvfuse_") and len(names) <= 2, names
        assert profile.kernel_time_ms > 0 and 0 < profile.percentage_peak_bandwith < 100


@pytest.mark.gpu
def test_the_profile_of_a_one_kernel_call_gives_the_kernel_the_calls_bytes():
    script = textwrap.dedent(
        """
        import json, torch
        from nvfuse import FusionDefinition
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.relu(fd.define_tensor([-1, -1], contiguity=True)))
        x = torch.randn(64, 64, device="cuda")
        fd.execute([x])
        fd.execute([x], profile=True)
        kernels = fd.profile().kernel_profiles
        print(json.dumps([[k.name, k.scheduler, k.input_bytes, k.percentage_peak_bandwidth]
                          for k in kernels]))
        """
    )
    env = dict(os.environ, NVFUSE_POISON_OUTPUTS="0")  # no poisoning fill
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    ((name, scheduler, input_bytes, percentage),) = json.loads(run.stdout.splitlines()[-1])
    assert name.startswith("nvfuse_") and scheduler == "pointwise"
    assert input_bytes == 64 * 64 * 4 and 0 < percentage < 100


@pytest.mark.gpu
def test_profile_lists_the_aten_kernels_of_a_matmul():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        fd.add_output(fd.ops.relu(fd.ops.matmul(a, b)))
    x = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    fd.execute([x, x], profile=True)
    schedulers = [k.scheduler for k in fd.profile().kernel_profiles]
    assert "expr_eval" in schedulers  # the GEMM's cuBLAS kernel, listed with nvfuse's


def test_profile_without_a_profiled_call_is_an_error():
    with pytest.raises(NvfuseError, match="profile=True"):
        _relu_fd().profile()


def test_inputs_and_outputs_are_state_indices():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], contiguity=True)
        s = fd.define_scalar(DataType.Double)
        fd.define_scalar(2.0)
        u = t * s
        fd.add_output(u)
    assert fd.inputs() == [t.index, s.index]
    assert fd.outputs() == [u.index]


def test_repr_is_the_predecessors_function_and_execs():
    fd = _relu_fd()
    text = repr(fd)
    assert text.startswith(f"\ndef nvfuse_fusion_id{fd.id()}(fd : FusionDefinition) -> None :")
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace[f"nvfuse_fusion_id{fd.id()}"](again)
    assert again.id() == fd.id()


def test_repro_scripts_by_the_predecessors_names():
    fd = _relu_fd()
    x = torch.randn(2, 3)
    assert "fd.execute(inputs)" in fd.repro_script_for([x]) or "execute" in fd.repro_script_for([x])
    with pytest.raises(NvfuseError, match="save_repro_inputs"):
        fd.last_repro_script()
    fd.execute([x], save_repro_inputs=True)
    assert fd.last_repro_script() == fd.repro_script_for([x])


def test_validate_compares_with_reference_outputs():
    fd = _relu_fd()
    x = torch.randn(4, 5)
    fd.validate([x], [torch.relu(x)])
    with pytest.raises(AssertionError, match="output 0"):
        fd.validate([x], [torch.relu(x) + 1.0])


def test_introspection_takes_the_predecessors_keywords():
    fd = _relu_fd()
    x = torch.randn(2, 3)
    fd.execute([x])
    assert fd.scheduled_fusion_ir_for([x], tensor_transforms=True, override_user_schedule=False)
    assert fd.last_scheduled_fusion_ir(tensor_transforms=False)
    fd.last_cuda_code(intrinsic_code=True, override_user_schedule=False)
    with pytest.raises(TypeError, match="unexpected"):
        fd.last_cuda_code(not_a_keyword=True)


# -- the regression the Thunder GPT backward found ---------------------------


@pytest.mark.parametrize("device", _devices())
def test_an_input_output_next_to_a_view_of_it(device):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4, 6], contiguity=True)
        fd.add_output(t)
        fd.add_output(fd.ops.reshape(t, new_shape=[24]))
    x = torch.randn(4, 6, device=device)
    same, flat = fd.execute([x])
    torch.testing.assert_close(same, x)
    torch.testing.assert_close(flat, x.reshape(24))


# -- the alias ---------------------------------------------------------------


@pytest.fixture
def attention_setting_restored():
    on = nvfuse._C.cudnn_attention()
    yield
    nvfuse._C.set_cudnn_attention(on)


def test_as_nvfuser_makes_import_nvfuser_resolve_to_nvfuse(monkeypatch, attention_setting_restored):
    import sys

    for name in ("nvfuser", "nvfuser._C", "nvfuser.pytorch_utils"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    nvfuse._C.set_cudnn_attention(True)
    assert nvfuse.as_nvfuser() is nvfuse
    # nvFuser's sdpfa ops ran torch's flash kernels; its clients compare
    # with them bit for bit.
    assert not nvfuse._C.cudnn_attention()
    import nvfuser
    from nvfuser import FusionDefinition as Fd, DataType as Dt, compute_tensor_descriptor
    from nvfuser.pytorch_utils import torch_dtype_to_nvfuser_dtype

    assert nvfuser is nvfuse and Fd is FusionDefinition and Dt is DataType
    assert compute_tensor_descriptor is nvfuse.compute_tensor_descriptor
    assert torch_dtype_to_nvfuser_dtype(torch.float16) == DataType.Half
    assert nvfuser._C.Scalar is nvfuse.Scalar
    assert nvfuse.as_nvfuser() is nvfuse  # again: harmless


def test_as_nvfuser_never_shadows_a_real_nvfuser(monkeypatch):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "nvfuser", types.ModuleType("nvfuser"))
    with pytest.raises(nvfuse.UnsupportedError, match="real nvFuser"):
        nvfuse.as_nvfuser()


@pytest.mark.parametrize("device", _devices())
def test_take_along_axis_truncates_a_floating_index(device):
    """Thunder's cross-entropy builds its index with where(ne, target, 0.0),
    which promotes to Float; the predecessor took it and truncated."""
    with FusionDefinition() as fd:
        logits = fd.define_tensor([-1, -1], contiguity=True)
        target = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
        zero = fd.define_scalar(0, dtype=DataType.Float)
        index = fd.ops.where(fd.ops.ne(target, -100), target, zero)
        index = fd.ops.broadcast_in_dim(index, shape=[target.shape()[-1], 1], broadcast_dims=[0])
        fd.add_output(fd.ops.take_along_axis(logits, index, dim=1))
    x = torch.randn(6, 10, device=device)
    t = torch.tensor([1, 9, 0, -100, 3, 2], device=device)
    (out,) = fd.execute([x, t])
    expected = x.gather(1, torch.where(t != -100, t, 0)[:, None])
    torch.testing.assert_close(out, expected)


def test_define_constant_is_a_constant_scalar():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], contiguity=True)
        fd.add_output(t * fd.define_constant(3.0))
    torch.testing.assert_close(fd.execute([torch.ones(2)])[0], torch.full((2,), 3.0))
    with pytest.raises(NvfuseError, match="value is required"):
        with FusionDefinition() as fd:
            fd.define_constant(None)


def test_kernel_profiles_have_the_predecessor_fields():
    from nvfuse.profile import KernelProfile, scheduler_of

    fields = (
        "name segment_id device stream correlation_id compile_time_ms time_ms "
        "effective_bandwidth_gbs percentage_peak_bandwidth grid_str block_str cluster_str "
        "shared_mem_str registers input_bytes output_bytes scheduler"
    ).split()
    kernel = KernelProfile("nvfuse_reduction_inner_persistent", 0.5, 0)
    assert all(hasattr(kernel, f) for f in fields)
    assert kernel.scheduler == "reduction"
    assert scheduler_of("nvfuse_pointwise_vec8") == "pointwise"
    assert scheduler_of("nvjet_sm90_tst_192x128") == "expr_eval"  # an ATen segment's GEMM


def test_a_cpu_profile_counts_the_bytes_of_the_call():
    fd = _relu_fd()
    x = torch.randn(8, 16)
    fd.execute([x], profile=True)
    profile = fd.profile()
    assert profile.input_bytes == profile.output_bytes == x.numel() * 4
    fields = "fusion_id segments cuda_evt_time_ms host_time_ms compile_time_ms kernel_time_ms "
    fields += "effective_bandwidth_gbs percentage_peak_bandwith input_bytes output_bytes "
    fields += "kernel_profiles verbose"
    assert all(hasattr(profile, f) for f in fields.split())
