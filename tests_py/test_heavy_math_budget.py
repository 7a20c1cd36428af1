"""The pointwise scheduler's code-volume budget (PointwiseTuning::
heavy_math_budget): elements a thread times the fusion's transcendental
ops per element stay within it, so that a long chain of inlined math
routines compiles in a fraction of the time; short bodies keep the full
16 elements a thread. Checked on generated code, without a GPU."""

import re

import pytest
import torch

from nvfuse import DataType, DefinitionError, _C
from workloads.transcendental_chain import chain_fd as chain


def elements_per_thread(fd, dtype):
    code = fd.cuda_code_for([torch.empty(16384, 4096, dtype=dtype)])
    params = re.search(r"// PointwiseParams\((.*)\)", code).group(1)
    width = int(re.search(r"vector_width=(\d+)", params).group(1))
    unroll = int(re.search(r"unroll=(\d+)", params).group(1))
    return width * unroll


@pytest.mark.parametrize(
    "dtype, nv", [(torch.float32, DataType.Float), (torch.bfloat16, DataType.BFloat16)], ids=str
)
def test_four_heavy_ops_keep_sixteen_elements(dtype, nv):
    # The pointwise benchmark's chain: sin, exp, tanh, sigmoid.
    assert elements_per_thread(chain(1, nv), dtype) == 16


@pytest.mark.parametrize(
    "dtype, nv, expected",
    [(torch.float32, DataType.Float, 4), (torch.bfloat16, DataType.BFloat16, 8)],
    ids=str,
)
def test_a_long_chain_holds_fewer_elements(dtype, nv, expected):
    # 16 heavy ops: 64 / 16 = 4 elements, at least one vector (8 bf16).
    assert elements_per_thread(chain(4, nv), dtype) == expected


def test_budget_zero_turns_it_off_and_bad_budgets_are_refused():
    base = _C.pointwise_tuning()
    try:
        _C.set_pointwise_tuning(*base[:5], heavy_math_budget=0)
        assert elements_per_thread(chain(4, DataType.Float), torch.float32) == 16
        with pytest.raises(DefinitionError, match="heavy_math_budget"):
            _C.set_pointwise_tuning(*base[:5], heavy_math_budget=-1)
    finally:
        _C.set_pointwise_tuning(*base)
    assert elements_per_thread(chain(4, DataType.Float), torch.float32) == 4
