"""What users observe nvfuse by: dumps set at run time and routed through
Python logging, kernel names that say what a kernel is, the versions
nvfuse was built against, and the check of the running torch."""

import logging
import subprocess
import sys

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition, _C
from nvfuse.errors import DefinitionError, DefinitionTypeError


@pytest.fixture
def dump_off_after():
    before = nvfuse.get_dump()
    yield
    nvfuse.set_dump(before)


def _softmax(width):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, width], contiguity=True, dtype=DataType.Float)
        m = fd.ops.max(x, [1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(x, m))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, [1], keepdim=True)))
    return fd


def test_set_dump_round_trips_and_names_unknown_options(dump_off_after):
    nvfuse.set_dump("segments,params")
    assert nvfuse.get_dump() == ["segments", "params"]
    nvfuse.set_dump(["fusion_ir"])
    assert nvfuse.get_dump() == ["fusion_ir"]
    with pytest.raises(DefinitionError, match="unknown option 'segmnts'.*segments"):
        nvfuse.set_dump("segmnts")
    assert nvfuse.get_dump() == ["fusion_ir"]  # unchanged by the bad call
    nvfuse.set_dump("")
    assert nvfuse.get_dump() == []


def _run_new_fusion(scale):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.mul(fd.ops.exp(x), scale))
    fd.execute([torch.randn(8)])


def test_dumps_reach_a_logging_handler(dump_off_after, capfd):
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = Collect(level=logging.INFO)
    logger = logging.getLogger("nvfuse")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        nvfuse.set_dump("fusion_ir")
        _run_new_fusion(3.25)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert any("fusion_ir" in r.getMessage() for r in records)
    assert all(r.name == "nvfuse" and r.levelno == logging.INFO for r in records)
    assert "fusion_ir" not in capfd.readouterr().err  # not printed twice


def test_dumps_go_to_stderr_without_a_handler(dump_off_after, capfd):
    nvfuse.set_dump("fusion_ir")
    _run_new_fusion(4.75)
    assert "===== nvfuse fusion_ir" in capfd.readouterr().err


def test_host_times_are_taken_as_a_table_and_start_over(dump_off_after):
    fd = _softmax(16)
    x = torch.randn(4, 16)
    fd.execute([x])  # compiled and cached: what follows is a cached call
    _C.take_host_times()
    nvfuse.set_dump("host_time")
    for _ in range(3):
        fd.execute([x])
    nvfuse.set_dump("")
    table = _C.take_host_times()
    (execute,) = [line for line in table.splitlines() if "_C.execute (all of it)" in line]
    assert execute.split()[-2] == "3"  # calls
    assert float(execute.split()[-1]) > 0  # us per call
    assert _C.take_host_times() == ""  # taken: nothing left for the exit to print


def test_kernel_names_say_kind_and_tactic():
    code = _softmax(1024).cuda_code_for([torch.randn(256, 1024)])
    name = code[code.index(") nvfuse_") + 2 : code.index("(const Args args)")]
    assert name.startswith("nvfuse_reduction_inner_"), name
    assert _C.nvrtc_compile(code, name, 90)["bytes"] > 0  # the entry NVRTC sees

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(x))
    code = fd.cuda_code_for([torch.randn(64, 64)])
    assert ") nvfuse_pointwise_vec" in code


def test_build_info_and_the_command_line():
    info = nvfuse.build_info()
    assert info["nvfuse"] == nvfuse.__version__
    assert info["torch"] == torch.__version__
    assert {"built_against_torch", "built_against_cuda", "nvrtc", "gpu"} <= set(info)
    printed = subprocess.run(
        [sys.executable, "-m", "nvfuse", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert "nvfuse" in printed and torch.__version__ in printed
    # nvfuse.version() keeps answering as nvFuser did, for its clients.
    assert str(nvfuse.version()).endswith("+nvfuse." + nvfuse.__version__)


def test_a_torch_of_another_minor_release_is_named_at_import(monkeypatch):
    import importlib

    v = importlib.import_module("nvfuse.version")  # the module, not nvfuse.version()

    monkeypatch.setattr(v, "_built_against", lambda: ("2.11.0+cu130", "13.0"))
    v.check_torch("2.11.3")  # a patch release is fine
    with pytest.raises(ImportError, match="built against torch 2.11.0.*has torch 2.12.0"):
        v.check_torch("2.12.0")


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_integer_dtypes_nvfuse_lacks_are_typed_errors(dtype):
    with pytest.raises(DefinitionTypeError, match=f"from_pytorch: torch dtype {dtype}"):
        with FusionDefinition() as fd:
            fd.from_pytorch(torch.zeros(4, dtype=dtype))
    with pytest.raises(DefinitionTypeError, match="fd.ops.cast"):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
            fd.add_output(fd.ops.cast(x, dtype))


def test_torch_dtypes_are_accepted_where_a_datatype_is():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True, dtype=torch.float32)
        fd.add_output(fd.ops.cast(x, torch.bfloat16))
    (out,) = fd.execute([torch.randn(5)])
    assert out.dtype == torch.bfloat16


def test_pointwise_ops_show_the_op_tables_parameters():
    import inspect

    from nvfuse.ops import Operators

    for name, _, parameters in _C.pointwise_ops():
        shown = list(inspect.signature(getattr(Operators, name)).parameters)
        assert shown == ["self"] + parameters.split(","), name


def test_recompile_dump_names_the_choices_a_new_kernel_was_made_for(dump_off_after, capfd):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.BFloat16)
        fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [1]))
    nvfuse.set_dump("recompile")
    fd.cuda_code_for([torch.empty(64, 1600, dtype=torch.bfloat16)])
    assert "recompile" not in capfd.readouterr().err  # the first kernel is no recompile
    fd.cuda_code_for([torch.empty(64, 1601, dtype=torch.bfloat16)])
    err = capfd.readouterr().err
    # An odd width: one element a vector, more groups a thread.
    assert "===== nvfuse recompile" in err
    assert "a new kernel for vector_width=1, " in err and "groups_per_thread=13" in err
    assert "(the last one: ReductionParams(inner" in err and "vector_width=8" in err
