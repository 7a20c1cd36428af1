"""Inner-outer partial clusters (ReductionParams::partial_cluster): the
blocks that walk a backward norm's rows launch in pairs (thread block
clusters, sm_90) and sum their column partials through distributed shared
memory, so that they write, and the finishing kernel reads, half the
partial rows. Which schedules take them and the kernel text without a GPU;
results against torch on one."""

import pytest
import torch

from nvfuse import _C
from workloads.norm_definitions import check_case, define_case
from test_reduction_codegen import cpu_inputs, params_of, ptxas_resources


@pytest.mark.parametrize(
    "name,dtype,rows,width,paired",
    [
        ("layer_norm_bwd", torch.bfloat16, 8192, 4096, True),  # staged rows
        ("layer_norm_bwd", torch.float32, 8192, 4096, True),  # shared partials
        ("rms_norm_bwd", torch.bfloat16, 8192, 4096, True),
        ("rms_norm_bwd", torch.bfloat16, 5000, 7, True),  # several rows a block
        ("rms_norm_bwd", torch.bfloat16, 2048, 1600, False),  # one column sum, few rows
        ("rms_norm_bwd", torch.float32, 8192, 4096, False),  # one fp32 column sum
        ("layer_norm_bwd", torch.bfloat16, 1024, 4096, False),  # few rows an SM
        ("layer_norm_bwd", torch.bfloat16, 4096, 65536, False),  # clusters hold the rows
    ],
    ids=str,
)
def test_backward_norms_pair_their_walking_blocks(name, dtype, rows, width, paired):
    code = define_case(name, dtype).cuda_code_for(cpu_inputs(name, rows, width, dtype))
    assert (", partial_cluster=2" in params_of(code)) == paired
    row_kernel = code[: code.index("_finish(const Args args)")]
    assert ("nvfuse::combine_cluster_partials<2, kBlock>(" in row_kernel) == paired
    if paired:
        # The pair's partial row, summed in rank order between two cluster
        # barriers.
        combine = row_kernel[row_kernel.index("every block's partials are in its shared") :]
        assert "partial_row = Index(blockIdx.x / 2) * kRows;" in combine
        assert "its shared memory stays while the others read it" in combine
    for kernel, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (kernel, registers, stack, spilled)


def test_the_staged_buffers_hold_the_partials():
    """Staged rows put their register partials into the copy buffers after
    the last copy has landed and every thread is done with its last row."""
    code = define_case("layer_norm_bwd", torch.bfloat16).cuda_code_for(
        cpu_inputs("layer_norm_bwd", 8192, 4096, torch.bfloat16)
    )
    assert ", staged" in params_of(code)
    tail = code[code.index("nvfuse::copy_async_wait<0>();") :]
    assert (
        tail.index("__syncthreads();")
        < tail.index("shared_t")
        < tail.index("nvfuse::cluster_sync();")
    )
    assert _C.nvrtc_compile(code, "nvfuse_reduction", 90)["bytes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize(
    "name,dtype,rows,width",
    [
        ("layer_norm_bwd", torch.bfloat16, 8192, 4096),
        ("layer_norm_bwd", torch.bfloat16, 2049, 1600),
        ("layer_norm_bwd", torch.float32, 4099, 1601),
        ("rms_norm_bwd", torch.bfloat16, 5003, 4096),
        ("rms_norm_bwd", torch.bfloat16, 5000, 7),
        ("layer_norm_bwd", torch.bfloat16, 3001, 127),
    ],
    ids=str,
)
def test_paired_blocks_match_torch(name, dtype, rows, width):
    """Odd row counts (a pair's blocks walk different numbers of rows),
    widths past the last full vector group, several rows a block."""
    fd = check_case(name, dtype, rows, width, "cuda")
    assert ", partial_cluster=2" in fd.last_cuda_code()
