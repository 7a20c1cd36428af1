"""print(fd) is a runnable definition: executing the printed script builds
the same fusion (same cache entry) and gives the same result."""

import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import assert_close


def _exec_script(script):
    namespace = {}
    exec(compile(script, "<repro>", "exec"), namespace)
    return namespace["fd"]


def _definition():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1, 1, -1],
            contiguity=[True, True, None],
            dtype=DataType.BFloat16,
            stride_order=[2, 0, 1],
        )
        t1 = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        c = fd.ops.cast(t0, DataType.Float)
        b = fd.ops.broadcast_in_dim(t1, shape=fd.define_vector([4, 1, 3]), broadcast_dims=[2])
        y = fd.ops.where(c > 0.5, c * s, b - 1e-5)
        var, mean = fd.ops.var_mean(y, dims=[2], correction=0, keepdim=True)
        fd.add_output(fd.ops.cast(y - mean, DataType.BFloat16), stride_order=[0, 1, 2])
        fd.add_output(fd.ops.sum(var, [0]))
    return fd


def _inputs():
    x = torch.randn(4, 3, 1).to(torch.bfloat16).permute(0, 2, 1)
    return [x, torch.randn(3), 1.5]


def test_printed_definition_round_trips_to_the_same_cache_entry():
    fd = _definition()
    replayed = _exec_script(str(fd))
    assert replayed.id() == fd.id()


def test_printed_definition_gives_the_same_result():
    fd = _definition()
    inputs = _inputs()
    replayed = _exec_script(str(fd))
    for a, b in zip(fd.execute(inputs), replayed.execute(inputs)):
        assert_close(a, b)


def test_repro_script_with_inputs_runs():
    fd = _definition()
    script = fd.repro_script(_inputs())
    assert "as_strided((4, 1, 3), (3, 1, 1))" in script
    _exec_script(script)  # defines and executes on random inputs


def test_save_repro_inputs_keeps_them_for_the_repro_script():
    fd = _definition()
    fd.execute(_inputs(), save_repro_inputs=True)
    assert "inputs = [" in fd.repro_script()


def test_repr_during_definition_shows_the_records_so_far():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        text = str(fd)
        fd.add_output(fd.ops.exp(t))
    assert "T0 = fd.define_tensor(shape=[-1], contiguity=[True]" in text


def test_special_float_constants_print_as_python():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.clamp(t, float("-inf"), 1e-300))
    assert "float('-inf')" in str(fd) and "1e-300" in str(fd)
    replayed = _exec_script(str(fd))
    assert replayed.id() == fd.id()
