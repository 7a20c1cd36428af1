"""
nvfuse's C++ core: recording, IR, cache and execution
"""

from __future__ import annotations
import collections.abc
import typing

__all__: list[str] = [
    "DataType",
    "DeviceMesh",
    "ParallelType",
    "RecordingState",
    "StateKind",
    "StateRef",
    "add_nvrtc_search_directory",
    "cached_fusion_ir",
    "cached_inputs_and_outputs",
    "cached_last_cuda_code",
    "cached_last_kernel_info",
    "cached_prepared_fusion_ir",
    "cached_python_definition",
    "cached_repro_script",
    "call_signature",
    "communicator_is_configured",
    "compile_ahead",
    "configure_communicator",
    "coordinate_tuning",
    "copy_into_layouts",
    "copy_into_padded",
    "cuda_code_for",
    "cudnn_attention",
    "describe_tensor",
    "execute",
    "finalize",
    "finish_dump_capture",
    "get_dump",
    "has_device_mesh",
    "host_outline",
    "host_program",
    "input_shardings",
    "layout_copies_source",
    "max_runtime_states",
    "num_fusions",
    "num_runtime_states",
    "nvrtc_compile",
    "nvrtc_version",
    "output_shardings",
    "overlap_backend",
    "philox4x32_10",
    "pointwise_ops",
    "pointwise_tuning",
    "reduction_tuning",
    "release_communicator",
    "repro_script_of_state",
    "reset_cache",
    "segment_definitions",
    "segment_summary",
    "set_compile_ahead",
    "set_coordinate_tuning",
    "set_cudnn_attention",
    "set_dump",
    "set_dump_sink",
    "set_max_runtime_states",
    "set_overlap_backend",
    "set_pointwise_tuning",
    "set_reduction_tuning",
    "set_shared_small_outputs",
    "set_tiered_compile",
    "shared_small_outputs",
    "start_dump_capture",
    "state_sharding",
    "take_host_times",
    "tiered_compile",
]

class DataType:
    """
    Members:

      Double

      Float

      Half

      BFloat16

      Int

      Int32

      Index

      Bool

      ComplexFloat

      ComplexDouble

      Float8_e4m3fn

      Float8_e5m2

      UInt64

      Null
    """

    BFloat16: typing.ClassVar[DataType]
    Bool: typing.ClassVar[DataType]
    ComplexDouble: typing.ClassVar[DataType]
    ComplexFloat: typing.ClassVar[DataType]
    Double: typing.ClassVar[DataType]
    Float: typing.ClassVar[DataType]
    Float8_e4m3fn: typing.ClassVar[DataType]
    Float8_e5m2: typing.ClassVar[DataType]
    Half: typing.ClassVar[DataType]
    Index: typing.ClassVar[DataType]
    Int: typing.ClassVar[DataType]
    Int32: typing.ClassVar[DataType]
    Null: typing.ClassVar[DataType]
    UInt64: typing.ClassVar[DataType]
    __members__: typing.ClassVar[dict[str, DataType]]
    @typing.overload
    def __eq__(self, other: DataType) -> bool: ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    @typing.overload
    def __ne__(self, other: DataType) -> bool: ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool: ...
    @typing.overload
    def __repr__(self) -> str: ...
    @typing.overload
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    @typing.overload
    def __str__(self) -> str: ...
    @typing.overload
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class ParallelType:
    """
    Members:

      Serial

      BIDx

      BIDy

      BIDz

      TIDx

      TIDy

      TIDz

      DIDx

      DIDy

      DIDz

      Stream

      Vectorize

      Unroll

      mesh_x

      mesh_y

      mesh_z

      stream
    """

    BIDx: typing.ClassVar[ParallelType]
    BIDy: typing.ClassVar[ParallelType]
    BIDz: typing.ClassVar[ParallelType]
    DIDx: typing.ClassVar[ParallelType]
    DIDy: typing.ClassVar[ParallelType]
    DIDz: typing.ClassVar[ParallelType]
    Serial: typing.ClassVar[ParallelType]
    Stream: typing.ClassVar[ParallelType]
    TIDx: typing.ClassVar[ParallelType]
    TIDy: typing.ClassVar[ParallelType]
    TIDz: typing.ClassVar[ParallelType]
    Unroll: typing.ClassVar[ParallelType]
    Vectorize: typing.ClassVar[ParallelType]
    __members__: typing.ClassVar[dict[str, ParallelType]]
    mesh_x: typing.ClassVar[ParallelType]
    mesh_y: typing.ClassVar[ParallelType]
    mesh_z: typing.ClassVar[ParallelType]
    stream: typing.ClassVar[ParallelType]
    @typing.overload
    def __eq__(self, other: ParallelType) -> bool: ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    @typing.overload
    def __ne__(self, other: ParallelType) -> bool: ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class StateKind:
    """
    Members:

      Tensor

      Scalar

      Vector
    """

    Scalar: typing.ClassVar[StateKind]
    Tensor: typing.ClassVar[StateKind]
    Vector: typing.ClassVar[StateKind]
    __members__: typing.ClassVar[dict[str, StateKind]]
    @typing.overload
    def __eq__(self, other: StateKind) -> bool: ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    @typing.overload
    def __ne__(self, other: StateKind) -> bool: ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class StateRef:
    def __repr__(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def kind(self) -> StateKind: ...
    @property
    def name(self) -> str: ...

class RecordingState:
    def __init__(self) -> None: ...
    def add_output(
        self,
        arg0: StateRef,
        arg1: StateRef | None,
        arg2: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    ) -> None: ...
    def broadcast(self, arg0: StateRef, arg1: collections.abc.Sequence[bool]) -> StateRef: ...
    def broadcast_in_dim(
        self,
        arg0: StateRef,
        arg1: StateRef | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        arg2: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    ) -> StateRef: ...
    def cast(self, arg0: StateRef, arg1: DataType) -> StateRef: ...
    def define_scalar(
        self, value: bool | int | float | complex | None, dtype: DataType
    ) -> StateRef: ...
    def define_tensor(
        self,
        shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        contiguity: bool | collections.abc.Sequence[bool | None],
        dtype: DataType,
        is_cpu: bool,
        stride_order: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    ) -> StateRef: ...
    def define_vector(self, arg0: collections.abc.Sequence[StateRef]) -> StateRef: ...
    def dtype_of(self, arg0: StateRef) -> DataType: ...
    def expand(
        self,
        arg0: StateRef,
        arg1: StateRef | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    ) -> StateRef: ...
    def fusion_ir(self) -> str: ...
    def mean(
        self,
        arg0: StateRef,
        arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        arg2: bool,
        arg3: DataType,
    ) -> StateRef: ...
    def pointwise(self, arg0: str, arg1: collections.abc.Sequence[StateRef]) -> StateRef: ...
    def python_definition(self, arg0: str) -> str: ...
    def rank_of(self, arg0: StateRef) -> int: ...
    def record_op(
        self, arg0: str, arg1: collections.abc.Sequence[tuple[str, typing.Any]]
    ) -> list[StateRef]:
        """
        Records `method` (e.g. 'fd.ops.reshape') with (keyword, value) arguments; returns the states it defines
        """
    def reduction(
        self,
        arg0: str,
        arg1: StateRef,
        arg2: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        arg3: bool,
        arg4: DataType,
    ) -> StateRef: ...
    def var(
        self,
        arg0: StateRef,
        arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        arg2: typing.SupportsInt | typing.SupportsIndex,
        arg3: bool,
    ) -> StateRef: ...
    def var_mean(
        self,
        arg0: StateRef,
        arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        arg2: typing.SupportsInt | typing.SupportsIndex,
        arg3: bool,
    ) -> tuple[StateRef, StateRef]: ...
    def vector_length(self, arg0: StateRef) -> int: ...
    def welford(
        self,
        arg0: StateRef,
        arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    ) -> list[StateRef]: ...

class DeviceMesh:
    def __eq__(self, arg0: DeviceMesh) -> bool: ...
    def __hash__(self) -> int: ...
    def __init__(
        self,
        shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        devices: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    ) -> None: ...
    def __repr__(self) -> str: ...
    @property
    def devices(self) -> list[int]: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def size(self) -> int: ...

def _register_error_types(
    arg0: typing.Any,
    arg1: typing.Any,
    arg2: typing.Any,
    arg3: typing.Any,
    arg4: typing.Any,
    arg5: typing.Any,
) -> None: ...
def add_nvrtc_search_directory(arg0: str) -> None:
    """
    A folder to look for libnvrtc.so in before the system's
    """

def cached_fusion_ir(arg0: typing.SupportsInt | typing.SupportsIndex) -> str: ...
def cached_inputs_and_outputs(
    arg0: typing.SupportsInt | typing.SupportsIndex,
) -> tuple[list[int], list[int]]:
    """
    (input state indices, returned output state indices): fd.inputs(), fd.outputs()
    """

def cached_last_cuda_code(arg0: typing.SupportsInt | typing.SupportsIndex) -> str: ...
def cached_last_kernel_info(arg0: typing.SupportsInt | typing.SupportsIndex) -> dict: ...
def cached_prepared_fusion_ir(arg0: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    The IR after the pre-segmentation passes
    """

def cached_python_definition(arg0: typing.SupportsInt | typing.SupportsIndex) -> str: ...
def cached_repro_script(arg0: typing.SupportsInt | typing.SupportsIndex) -> str: ...
def call_signature(items: collections.abc.Sequence) -> bytes:
    """
    Bytes that two calls' items share exactly when every tensor has the same dtype, device, layout, sizes and strides and every other item the same type: a region's per-call cache key, built without Python tuples
    """

def communicator_is_configured() -> bool: ...
def compile_ahead() -> bool:
    """
    Whether compiling ahead is on
    """

def configure_communicator(
    rank: typing.SupportsInt | typing.SupportsIndex,
    world_size: typing.SupportsInt | typing.SupportsIndex,
    local_rank: typing.SupportsInt | typing.SupportsIndex,
) -> None:
    """
    Sets this process's rank; team groups are then created through nvfuse.multidevice.communicator._new_team_group
    """

def coordinate_tuning() -> tuple[int, int, int]: ...
def copy_into_layouts(
    tensors: collections.abc.Sequence,
    strides: collections.abc.Sequence[
        collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]
    ],
) -> list:
    """
    Fresh copies of `tensors`, each laid out with its dense `strides`: CUDA tensors by one kernel launch per element size (a step's weight layout conversions), others by ATen
    """

def copy_into_padded(
    tensors: collections.abc.Sequence,
    sizes: collections.abc.Sequence[
        collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]
    ],
    strides: collections.abc.Sequence[
        collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]
    ],
) -> list:
    """
    copy_into_layouts into copies of the `sizes` given, larger than their tensors along one axis at most, zeros past each tensor's extent there (a GEMM operand padded to aligned rows)
    """

def cuda_code_for(
    fusion_id: typing.SupportsInt | typing.SupportsIndex, inputs: collections.abc.Sequence
) -> str: ...
def cudnn_attention() -> bool:
    """
    Whether sdpfa ops may run cuDNN's attention
    """

def describe_tensor(
    arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
    arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
) -> tuple[list[int], list[bool | None], list[int]]:
    """
    (shape, contiguity, stride_order) that define_tensor records for a tensor with these sizes and strides
    """

def execute(
    fusion_id: typing.SupportsInt | typing.SupportsIndex,
    inputs: collections.abc.Sequence,
    cuda_device: typing.SupportsInt | typing.SupportsIndex = -1,
) -> list:
    """
    cuda_device: where a fusion that reads no tensor runs (-1: the CPU)
    """

def finalize(arg0: RecordingState) -> int:
    """
    Adds the recorded definition to the fusion cache (or finds its twin) and returns the fusion id. The state is consumed.
    """

def finish_dump_capture() -> str:
    """
    The dump output collected since start_dump_capture
    """

def get_dump() -> str:
    """
    The dump options on now, as a comma list
    """

def has_device_mesh(fusion_id: typing.SupportsInt | typing.SupportsIndex) -> bool: ...
def host_outline(fusion_id: typing.SupportsInt | typing.SupportsIndex) -> list[tuple[int, str]]:
    """
    [(depth, kind)]: the host program's steps, a pipelined loop's instructions nested under it
    """

def host_program(fusion_id: typing.SupportsInt | typing.SupportsIndex) -> str: ...
def input_shardings(fusion_id: typing.SupportsInt | typing.SupportsIndex) -> list:
    """
    [(DeviceMesh, mesh axis per logical axis or -1, whole-axis flags)] per input; None for scalars
    """

def layout_copies_source(element_size: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    The CUDA source of copy_into_layouts' kernel for elements of 1, 2, 4 or 8 bytes
    """

def max_runtime_states() -> int: ...
def num_fusions() -> int: ...
def num_runtime_states() -> int: ...
def nvrtc_compile(
    source: str,
    name: str,
    arch: typing.SupportsInt | typing.SupportsIndex = 90,
    options: collections.abc.Sequence[str] = [],
) -> dict:
    """
    Compiles generated code with NVRTC (no GPU needed) and `options` after nvfuse's own ("--ptxas-options=-v" puts each kernel's registers and spills in the log); raises InternalError with NVRTC's log on a compile error
    """

def nvrtc_version() -> str:
    """
    The version of the NVRTC library nvfuse loads (raises when none is found)
    """

def output_shardings(fusion_id: typing.SupportsInt | typing.SupportsIndex) -> list:
    """
    [(DeviceMesh, mesh axis per logical axis or -1)] per returned output (in-place updates of inputs are not returned)
    """

def overlap_backend() -> str:
    """
    The overlap backend now: "auto", "nccl" or "symm_mem"
    """

def philox4x32_10(
    counter: typing.Annotated[
        collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(4)"
    ],
    key: typing.Annotated[
        collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(2)"
    ],
) -> list[int]:
    """
    The Philox4x32-10 block that nvfuse's random ops draw from (for known-answer tests)
    """

def pointwise_ops() -> list: ...
def pointwise_tuning() -> tuple[int, int, int, int, int, int]: ...
def reduction_tuning() -> tuple[int, int, int, int, int, int, int, int, int, int]: ...
def release_communicator() -> None:
    """
    Frees the sharded fusions' compiled states (their process groups) and the communicator's groups: called at exit, before torch.distributed is torn down
    """

def repro_script_of_state(arg0: RecordingState) -> str:
    """
    The repro script of a definition still being recorded
    """

def reset_cache() -> None: ...
def segment_definitions(
    fusion_id: typing.SupportsInt | typing.SupportsIndex, inputs: collections.abc.Sequence
) -> list:
    """
    [(kind, python, sources, destinations)] per segment (fd.segment)
    """

def segment_summary(
    fusion_id: typing.SupportsInt | typing.SupportsIndex,
) -> list[tuple[str, list[str]]]:
    """
    [(kind, op names)] per segment: kind 'fused' (generated kernels, or the reference evaluator on CPU) or 'aten' (one ATen call)
    """

def set_compile_ahead(on: bool) -> None:
    """
    Compiling ahead (on by default; NVFUSE_COMPILE_AHEAD=0 at start turns it off): a fusion of several kernels compiles every kernel a call lacks at once, on threads of their own, rather than one after another
    """

def set_coordinate_tuning(
    block_size: typing.SupportsInt | typing.SupportsIndex,
    bytes_per_thread: typing.SupportsInt | typing.SupportsIndex = 16,
    max_unroll: typing.SupportsInt | typing.SupportsIndex = 4,
) -> None:
    """
    Launch-shape defaults of the coordinate scheduler (for tuning runs)
    """

def set_cudnn_attention(on: bool) -> None:
    """
    Whether sdpfa_fwd/sdpfa_bwd without dropout run cuDNN's attention where it applies (on by default) or always torch's flash kernels, as nvFuser did (as_nvfuser() turns it off)
    """

def set_dump(options: str) -> None:
    """
    What NVFUSE_DUMP prints from now on: a comma list of option names
    """

def set_dump_sink(sink: collections.abc.Callable[[str], None]) -> None:
    """
    A function that receives each dump's text instead of stderr (None: stderr)
    """

def set_max_runtime_states(arg0: typing.SupportsInt | typing.SupportsIndex) -> None: ...
def set_overlap_backend(name: str) -> None:
    """
    How the pipelined all-gather + GEMM and GEMM + reduce-scatter loops communicate: "auto" (the default: the copy engine where it was measured faster and every device of the team reads its peers' memory, else c10d), "nccl" (c10d collectives) or "symm_mem" (copy-engine reads of torch's symmetric memory)
    """

def set_pointwise_tuning(
    block_size: typing.SupportsInt | typing.SupportsIndex,
    max_unroll: typing.SupportsInt | typing.SupportsIndex,
    elements_per_thread: typing.SupportsInt | typing.SupportsIndex = 16,
    transpose_tile: typing.SupportsInt | typing.SupportsIndex = 0,
    transpose_vector: typing.SupportsInt | typing.SupportsIndex = 0,
    heavy_math_budget: typing.SupportsInt | typing.SupportsIndex = 64,
) -> None:
    """
    Launch-shape defaults of the pointwise scheduler (for tuning runs); the transpose kernel's tile and vector width, 0 for the defaults; the budget of elements a thread times heavy math ops per element (0: none)
    """

def set_reduction_tuning(
    elements_per_thread: typing.SupportsInt | typing.SupportsIndex,
    max_persistent_threads: typing.SupportsInt | typing.SupportsIndex = 1024,
    chunked_threads: typing.SupportsInt | typing.SupportsIndex = 1024,
    pipelining: typing.SupportsInt | typing.SupportsIndex = 1,
    max_cluster: typing.SupportsInt | typing.SupportsIndex = 16,
    carry_exps: typing.SupportsInt | typing.SupportsIndex = 1,
    staging: typing.SupportsInt | typing.SupportsIndex = 1,
    streamed_cluster: typing.SupportsInt | typing.SupportsIndex = 16,
    outer_rows: typing.SupportsInt | typing.SupportsIndex = 8,
    width_buckets: typing.SupportsInt | typing.SupportsIndex = 0,
) -> None:
    """
    Launch-shape defaults of the inner reduction scheduler (for tuning runs); width_buckets 1 shares one kernel among the row widths of a bucket (fewer compiles, slower kernels)
    """

def set_shared_small_outputs(on: bool) -> None:
    """
    Whether a call's CUDA outputs of at most 16 KiB are carved from blocks shared among them (one caching-allocator call for several; on by default, NVFUSE_SHARED_SMALL_OUTPUTS=0 at start turns it off)
    """

def set_tiered_compile(on: bool) -> None:
    """
    Tiered compilation: a kernel not compiled yet compiles in the background while its segment runs on the ATen reference evaluator (NVFUSE_TIERED_COMPILE=1 at start)
    """

def shared_small_outputs() -> bool:
    """
    Whether small outputs share blocks (set_shared_small_outputs)
    """

def start_dump_capture() -> None:
    """
    Collects this thread's NVFUSE_DUMP output until finish_dump_capture
    """

def state_sharding(
    fusion_id: typing.SupportsInt | typing.SupportsIndex,
    state_index: typing.SupportsInt | typing.SupportsIndex,
) -> tuple[DeviceMesh, list[int], list[bool]]:
    """
    (DeviceMesh, mesh axis per logical axis or -1, whole-axis flags) of an input or output tensor
    """

def take_host_times() -> str:
    """
    NVFUSE_DUMP=host_time's per-step table of the calls timed so far ('' when none), clearing the totals (the process prints what is left at exit)
    """

def tiered_compile() -> bool:
    """
    Whether tiered compilation is on
    """
