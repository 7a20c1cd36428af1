"""FusionDefinition: record a program of tensor ops, then execute it.

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        t1 = fd.ops.relu(t0 * 2.0)
        fd.add_output(t1)
    (out,) = fd.execute([x])

Each call is recorded in C++ and checked at once (a bad axis fails where it
is written). Leaving the `with` block looks the definition up in the fusion
cache: the same definition written again reuses the cached fusion.
"""

import warnings

import torch

from . import _C
from ._C import DataType, StateKind
from .errors import (
    DefinitionError,
    DefinitionTypeError,
    UnsupportedError,
)
from .alias import client_spelling
from .execute_inputs import (
    INT64_MAX,
    INT64_MIN,
    check_device,
    input_list,
    normalized_device,
    refuse_unbindable,
    vectors_spread,
)
from .handles import Scalar, Tensor, Vector, _Handle, make_handle
from .ops import Operators
from .pytorch_utils import python_scalar_dtype
from .repro import inputs_script
from .schedule import Schedule
from .tensor_ops import _dtype


# Scalar dtypes define_vector casts to Int (sizes Thunder spells as floats).
_FLOATING_SCALARS = (DataType.Double, DataType.Float, DataType.Half, DataType.BFloat16)


class FusionDefinition:
    """A fusion being defined (inside `with`) or defined (after it).

    Subclasses may define `definition(self)` instead of using `with`; it runs
    on the first execute().
    """

    def __init__(self, id=None, max_length=None, use_multidevice_executor=False, backend_type=None):
        # max_length, use_multidevice_executor and backend_type are accepted
        # for compatibility with nvFuser and unused: the recording has no
        # length limit, and a definition with a device mesh always runs on
        # the multi-device executor, with NCCL for CUDA tensors.
        self._state = None
        self._id = None
        self._saved_inputs = None
        self._sharded = None  # whether execute takes the multi-device path
        self._debug_output = None
        self._profile = None
        self._graphs = None  # the CUDA graphs of execute(cuda_graph=True)
        # execute()'s cuda_graph when a call does not say (nvfuse/cuda_graph.py).
        self.cuda_graph = False
        self.ops = Operators(self)
        self.sched = Schedule(self)
        if id is not None:
            if not 0 <= id < _C.num_fusions():
                raise DefinitionError(
                    f"FusionDefinition({id}): no cached fusion has id {id} "
                    f"(the cache holds {_C.num_fusions()})"
                )
            self._id = id

    # --- defining -----------------------------------------------------------

    def __enter__(self):
        if self._id is not None:
            raise DefinitionError(
                f"this FusionDefinition is already defined (fusion id {self._id}); "
                "create a new FusionDefinition to define another"
            )
        if self._state is not None:
            raise DefinitionError("this FusionDefinition is already being defined")
        self._state = _C.RecordingState()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if exc_type is not None:
            self._state = None  # a failed definition is dropped
            return False
        state, self._state = self._state, None
        self._id = _C.finalize(state)
        return False

    def definition(self):
        """Override in a subclass to define the fusion without `with`."""
        raise NotImplementedError

    def _has_definition_method(self):
        return type(self).definition is not FusionDefinition.definition

    def _require_recording(self, what):
        if self._state is None:
            where = (
                "after the definition was finished"
                if self._id is not None
                else "outside of `with FusionDefinition() as fd:`"
            )
            raise DefinitionError(f"{what} was called {where}")
        return self._state

    def _record(self, record, what="an fd.ops call"):
        """Runs `record(state)` (a RecordingState call returning StateRefs)
        and wraps what it returns in handles."""
        state = self._require_recording(what)
        refs = record(state)
        if isinstance(refs, tuple):
            return tuple(make_handle(self, r, state) for r in refs)
        if refs is None:
            return None
        return make_handle(self, refs, state)

    def _operand(self, value, what):
        """The StateRef of an op operand; Python numbers become constants."""
        if isinstance(value, _Handle):
            if value._fd is not self:
                raise DefinitionTypeError(
                    f"{what}: {value!r} belongs to another FusionDefinition; "
                    "values cannot be shared between definitions"
                )
            return value._ref
        if isinstance(value, (bool, int, float, complex)):
            return self.define_scalar(value)._ref
        if isinstance(value, torch.Tensor):
            raise DefinitionTypeError(
                f"{what}: got a torch.Tensor; define it with fd.define_tensor "
                "or fd.from_pytorch and pass its value to execute()"
            )
        raise DefinitionTypeError(
            f"{what}: expected a tensor or scalar of this definition or a Python "
            f"number, got {type(value).__name__}"
        )

    def _shape_operand(self, shape, what):
        """A shape: a Vector handle, or a list of ints and scalar handles."""
        if isinstance(shape, Vector):
            return self._operand(shape, what)
        if not isinstance(shape, (list, tuple)):
            raise DefinitionTypeError(
                f"{what}: shape must be a list of sizes or a vector, got {type(shape).__name__}"
            )
        if all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
            return [int(s) for s in shape]
        return self.define_vector(list(shape))._ref

    def _record_pointwise(self, name, values):
        what = f"fd.ops.{name}"
        self._require_recording(what)
        refs = [self._operand(v, what) for v in values]
        return self._record(lambda s: s.pointwise(name, refs), what)

    def define_tensor(
        self,
        shape=None,
        contiguity=None,
        dtype=DataType.Float,
        is_cpu=False,
        stride_order=None,
        *,
        sizes=None,
        strides=None,
        static_sizes=False,
        symbolic_sizes=None,
    ) -> Tensor:
        """An input tensor.

        shape: -1 for a symbolic size, 1 for a broadcast axis, n for a fixed
        size. contiguity: one bool for all axes, or one Optional[bool] per
        axis in allocation order (None for broadcast axes; None on a -1 axis
        makes it an expanded broadcast, stride 0). stride_order[i] is the
        stride rank of axis i (0 = fastest). is_cpu: a 0-d CPU scalar tensor.
        Alternatively give `sizes` and `strides` of an example tensor.
        """
        state = self._require_recording("fd.define_tensor")
        if symbolic_sizes is not None:  # the predecessor's older keyword
            shape = symbolic_sizes
        if sizes is not None:
            if shape is not None:
                raise DefinitionTypeError("define_tensor: give either shape or sizes, not both")
            sizes = [int(s) for s in sizes]
            if strides is None:
                strides = torch.empty(sizes, device="meta").stride()
            shape, contiguity, stride_order = _C.describe_tensor(sizes, [int(s) for s in strides])
            if static_sizes:
                shape = list(sizes)
        if shape is None:
            raise DefinitionTypeError("define_tensor: shape (or sizes) is required")
        shape = [int(s) for s in shape]
        if contiguity is None:
            contiguity = False  # makes no claim about strides
        if not isinstance(contiguity, bool):
            contiguity = [None if c is None else bool(c) for c in contiguity]
        ref = state.define_tensor(
            shape,
            contiguity,
            _dtype(dtype, "define_tensor"),
            bool(is_cpu),
            list(stride_order or []),
        )
        return make_handle(self, ref, state)

    def from_pytorch(self, tensor, static_sizes=False) -> Tensor:
        """An input tensor shaped, laid out and typed like `tensor`."""
        if not isinstance(tensor, torch.Tensor):
            raise DefinitionTypeError(
                f"from_pytorch: expected a torch.Tensor, got {type(tensor).__name__}"
            )
        return self.define_tensor(
            sizes=tensor.size(),
            strides=tensor.stride(),
            dtype=_dtype(tensor.dtype, "from_pytorch"),
            is_cpu=tensor.is_cpu and tensor.dim() == 0,
            static_sizes=static_sizes,
        )

    def define_scalar(self, value=None, dtype=None) -> Scalar:
        """A constant (given a value) or a symbolic scalar input (no value,
        dtype Double unless given)."""
        state = self._require_recording("fd.define_scalar")
        if isinstance(value, (DataType, torch.dtype)) and dtype is None:
            value, dtype = None, value  # define_scalar(DataType.Int): symbolic
        if value is not None and not isinstance(value, (bool, int, float, complex)):
            raise DefinitionTypeError(
                f"define_scalar: the value must be a Python number, got {type(value).__name__}"
            )
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not INT64_MIN <= value <= INT64_MAX
        ):
            raise DefinitionError(
                f"define_scalar: {value} is outside int64 [{INT64_MIN}, {INT64_MAX}]"
            )
        if dtype is None:
            dtype = python_scalar_dtype(value) if value is not None else DataType.Double
        ref = state.define_scalar(value, _dtype(dtype, "define_scalar"))
        return make_handle(self, ref, state)

    def define_constant(self, value, dtype=None) -> Scalar:
        """A constant scalar: define_scalar with a value, by the
        predecessor's other name."""
        if value is None:
            raise DefinitionTypeError("define_constant: a value is required")
        return self.define_scalar(value, dtype)

    def define_vector(self, values, dtype=DataType.Int) -> Vector:
        """A shape: a list of ints and integer scalars. `define_vector(n)`
        (an int) is a vector of n symbolic Int inputs."""
        state = self._require_recording("fd.define_vector")
        dtype = _dtype(dtype, "define_vector")
        if isinstance(values, int) and not isinstance(values, bool):
            values = [self.define_scalar(dtype=DataType.Int) for _ in range(values)]
        if dtype != DataType.Int:
            raise DefinitionTypeError("define_vector: only DataType.Int vectors exist")
        refs = []
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, (int, Scalar)):
                raise DefinitionTypeError(
                    f"define_vector: element {i} must be an int or an integer scalar, got {v!r}"
                )
            if isinstance(v, Scalar) and v.dtype in _FLOATING_SCALARS:
                # Thunder spells sizes as Float expressions of Int scalars
                # (192 * reciprocal(S3) - flag); the predecessor took them
                # as the Int sizes they are (truncated, as a cast does).
                v = self.ops.cast(v, DataType.Int)
            refs.append(self._operand(v, "fd.define_vector"))
        return make_handle(self, state.define_vector(refs), state)

    def add_output(self, output, alias_input=None, stride_order=None):
        """Marks `output` as a result. With `alias_input`, the result is
        written into that input in place and not returned. `stride_order`
        lays the result out in memory (the shape stays logical)."""
        state = self._require_recording("fd.add_output")
        if isinstance(alias_input, (list, tuple)):  # add_output(t, stride_order)
            if stride_order is not None:
                raise DefinitionTypeError(
                    "add_output: stride_order was given twice (positionally and by keyword)"
                )
            alias_input, stride_order = None, alias_input
        if not isinstance(output, Tensor):
            raise DefinitionTypeError(
                f"add_output: the output must be a tensor of this definition, got {output!r}"
            )
        out_ref = self._operand(output, "add_output")
        alias_ref = None
        if alias_input is not None:
            if not isinstance(alias_input, Tensor):
                raise DefinitionTypeError(
                    f"add_output: alias_input must be an input tensor, got {alias_input!r}"
                )
            alias_ref = self._operand(alias_input, "add_output")
        state.add_output(out_ref, alias_ref, list(stride_order or []))

    # --- running ------------------------------------------------------------

    def _ensure_defined(self):
        if self._id is not None:
            return
        if self._state is not None:
            raise DefinitionError(
                "execute() was called inside the `with` block; finish the definition first"
            )
        if not self._has_definition_method():
            raise DefinitionError(
                "this FusionDefinition has no definition: use "
                "`with FusionDefinition() as fd:` or a subclass with "
                "definition(self)"
            )
        with self:
            self.definition()
            if hasattr(self, "multidevice_schedule"):
                self.multidevice_schedule()

    def execute(
        self,
        inputs,
        *,
        device=None,
        override_user_schedule=False,
        capture_debug_output=False,
        print_repro=False,
        profile=False,
        save_repro_inputs=False,
        cuda_graph=None,
        _enable_options=(),
        _disable_options=(),
    ):
        """Runs the fusion on `inputs` (tensors and Python numbers, in the
        order their definitions were recorded); returns the outputs.
        `device` ("cuda", "cuda:1", 0, "cpu"): the tensor inputs must be
        there, and a fusion that reads no tensor (a lone full or iota) runs
        there (else on the CPU). `capture_debug_output`: what NVFUSE_DUMP
        prints during the call is kept for debug_output() instead.
        `profile`: per-kernel device times, read by profile().
        `save_repro_inputs`: keeps the inputs for last_repro_script().
        `cuda_graph` (default: the definition's `cuda_graph` attribute,
        False): record the call's launches as a CUDA graph once per set of
        input tensors and replay it; the outputs are the graph's own
        tensors, overwritten by the next call with the same inputs
        (nvfuse/cuda_graph.py, docs/api.md).
        `override_user_schedule`, `_enable_options` and `_disable_options`
        are the predecessor's; nvfuse has no user schedules and no option
        names of its own there, so they are accepted and each unknown
        option is reported once (docs/compatibility.md)."""
        graphed = self.cuda_graph if cuda_graph is None else cuda_graph
        if (
            self._sharded is False
            and type(inputs) is list
            and device is None
            and not (capture_debug_output or print_repro or profile or save_repro_inputs)
            and not (_enable_options or _disable_options)
            and (not graphed or self._graphs is not None)
        ):
            # The common call, after the first: straight to the C++ executor
            # or the CUDA graphs (every Python step below is then a no-op).
            self._debug_output = None
            if graphed:
                return self._graphs.execute(inputs, -1)
            return self._execute_plain(inputs, -1)
        self._ensure_defined()
        report_unused_options(_enable_options, _disable_options)
        inputs = input_list(inputs)
        cuda_device = -1
        if device is not None:
            device = normalized_device(device)
            check_device(inputs, device)
            cuda_device = device.index if device.type == "cuda" else -1
        if save_repro_inputs:
            self._saved_inputs = [
                t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs
            ]
        if print_repro:
            print(self.repro_script(inputs))
        if self._sharded is None:
            self._sharded = _C.has_device_mesh(self._id)

        def run():
            if self._sharded:
                from .multidevice import dtensor

                return dtensor.execute_sharded(self, inputs)
            return self._execute_plain(inputs, cuda_device)

        self._debug_output = None
        if graphed:
            return self._execute_graphed(inputs, cuda_device, profile, capture_debug_output)
        if capture_debug_output:
            _C.start_dump_capture()
            try:
                return self._run_maybe_profiled(run, inputs, profile, cuda_device)
            finally:
                self._debug_output = _C.finish_dump_capture()
        return self._run_maybe_profiled(run, inputs, profile, cuda_device)

    def _execute_plain(self, inputs, cuda_device):
        try:
            return _C.execute(self._id, inputs, cuda_device)
        except (RuntimeError, TypeError, ValueError):
            spread = vectors_spread(inputs)  # vector inputs as lists: off the fast path
            if spread is not inputs:
                return _C.execute(self._id, spread, cuda_device)
            # Only on failure: name an unbindable input if there is one
            # (pybind11's and ATen's own errors name none).
            refuse_unbindable(inputs)
            raise

    def _execute_graphed(self, inputs, cuda_device, profile, capture_debug_output):
        from .cuda_graph import FusionGraphs

        if self._sharded:
            raise UnsupportedError(
                "execute(cuda_graph=True): a sharded fusion's communications are not captured"
            )
        if profile or capture_debug_output:
            raise UnsupportedError(
                "execute(cuda_graph=True) replays recorded launches: "
                "profile=True and capture_debug_output=True need a plain execute"
            )
        if self._graphs is None:
            self._graphs = FusionGraphs(self._execute_plain)
        return self._graphs.execute(inputs, cuda_device)

    def _run_maybe_profiled(self, run, inputs, profile, cuda_device):
        if not profile:
            return run()
        from .profile import profiled_execute

        on_cuda = cuda_device >= 0 or any(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs)
        # A sharded fusion's per-process segments are not listed (its host
        # program is: NVFUSE_DUMP=host_ir); its profile counts none.
        segments = 0 if self._sharded else len(self.segment_summary())
        outputs, self._profile = profiled_execute(run, self._id, segments, on_cuda, inputs)
        return outputs

    def debug_output(self):
        """What NVFUSE_DUMP printed during the last execute(...,
        capture_debug_output=True); None when the last call did not capture."""
        return self._debug_output

    def profile(self):
        """The FusionProfile of the last execute(..., profile=True): kernel
        names and device times (nvfuse.profile.FusionProfile)."""
        if self._profile is None:
            raise DefinitionError("profile(): execute() was not called with profile=True")
        return self._profile

    def validate(self, inputs, reference_outputs=None, **kwargs):
        """Executes on `inputs` and checks each output against
        `reference_outputs` (torch.testing.assert_close's tolerances for the
        output's dtype; exact for integer and Bool outputs). Raises
        AssertionError naming the output that differs."""
        if reference_outputs is None:
            raise DefinitionTypeError(
                "validate: reference_outputs is required (nvfuse does not "
                "compute a reference of its own)"
            )
        outputs = self.execute(inputs, **kwargs)
        if len(outputs) != len(reference_outputs):
            raise AssertionError(
                f"validate: the fusion returned {len(outputs)} outputs, "
                f"{len(reference_outputs)} references were given"
            )
        for i, (out, ref) in enumerate(zip(outputs, reference_outputs)):
            try:
                torch.testing.assert_close(
                    out, ref.to(out.device), equal_nan=True, check_stride=False
                )
            except AssertionError as e:
                raise AssertionError(f"validate: output {i} differs: {e}") from None

    def output_shardings(self):
        """Each output's nvfuse.multidevice.Sharding (mesh and sharded axes)."""
        from .multidevice.sharding import output_shardings

        return output_shardings(self)

    # --- introspection ------------------------------------------------------

    def id(self) -> int:
        """The fusion's id in the FusionCache."""
        self._ensure_defined()
        return self._id

    def repro_script(self, inputs=None) -> str:
        """A runnable script that defines this fusion and, given inputs (or
        those kept by save_repro_inputs=True), executes it on random tensors
        of the same shapes, strides and dtypes."""
        if self._state is not None:
            text = _C.repro_script_of_state(self._state)
        else:
            self._ensure_defined()
            text = _C.cached_repro_script(self._id)
        if inputs is None:
            inputs = self._saved_inputs
        if inputs is not None:
            text += "\n" + inputs_script(inputs)
        return client_spelling(text)

    def repro_script_for(self, inputs=None) -> str:
        """repro_script(inputs), by the predecessor's name."""
        return self.repro_script(inputs)

    def last_repro_script(self) -> str:
        """The repro script with the inputs kept by the last
        execute(..., save_repro_inputs=True)."""
        if self._saved_inputs is None:
            raise DefinitionError(
                "last_repro_script(): no inputs were kept; call "
                "execute(inputs, save_repro_inputs=True) first"
            )
        return self.repro_script(self._saved_inputs)

    def __repr__(self) -> str:
        """The definition as the predecessor prints it: a newline, then
        `def nvfuse_fusion_idN(fd : FusionDefinition) -> None :` and its
        body, which tools exec and call by name (`nvfuser_fusion_idN`
        under as_nvfuser(), the name such tools look up)."""
        if self._state is None and self._id is None:
            return "<FusionDefinition (empty)>"
        if self._state is not None:
            return client_spelling("\n" + self._state.python_definition("nvfuse_fusion"))
        return client_spelling("\n" + _C.cached_python_definition(self._id))

    def __str__(self) -> str:
        """print(fd): the whole runnable script (fd.repro_script())."""
        if self._state is None and self._id is None:
            return "<FusionDefinition (empty)>"
        return self.repro_script()

    def inputs(self) -> list:
        """The state indices (the N of T<N>/S<N>) of the fusion's inputs, in
        the order execute() binds them."""
        self._ensure_defined()
        return list(_C.cached_inputs_and_outputs(self._id)[0])

    def outputs(self) -> list:
        """The state indices of the outputs execute() returns, in order
        (outputs written into an input with alias_input are not among them)."""
        self._ensure_defined()
        return list(_C.cached_inputs_and_outputs(self._id)[1])

    def fusion_ir(self) -> str:
        """The fusion IR as defined."""
        if self._state is not None:
            return self._state.fusion_ir()
        self._ensure_defined()
        return _C.cached_fusion_ir(self._id)

    def last_scheduled_fusion_ir(self, tensor_transforms=False, **kwargs) -> str:
        """The IR the runtime executes (after the pre-segmentation passes).
        tensor_transforms and override_user_schedule are the predecessor's
        and change nothing here: nvfuse schedules as data (NVFUSE_DUMP=params),
        not as transforms of the IR."""
        _check_introspection_kwargs("last_scheduled_fusion_ir", kwargs)
        self._ensure_defined()
        return _C.cached_prepared_fusion_ir(self._id)

    def scheduled_fusion_ir_for(self, inputs, tensor_transforms=False, **kwargs) -> str:
        """The IR the runtime executes for these inputs (the same for every
        input signature: see last_scheduled_fusion_ir)."""
        return self.last_scheduled_fusion_ir(tensor_transforms, **kwargs)

    def last_cuda_code(self, intrinsic_code=False, **kwargs) -> str:
        """The CUDA C++ of the kernel the last execute() launched ("" when it
        ran on the reference evaluator). The device runtime the kernel
        includes is always part of the text, so intrinsic_code changes
        nothing."""
        _check_introspection_kwargs("last_cuda_code", kwargs)
        self._ensure_defined()
        return _C.cached_last_cuda_code(self._id)

    def last_kernel_info(self) -> dict:
        """Resources of the kernel the last execute() launched, as the driver
        reports them: {"registers": per thread, "local_bytes": per thread}
        (local_bytes > 0 means register spills or stack arrays; zeros when
        no kernel ran)."""
        self._ensure_defined()
        return _C.cached_last_kernel_info(self._id)

    def segment_summary(self) -> list:
        """How execute() cuts this fusion: one (kind, op names) pair per
        segment, in run order. kind is "fused" (pointwise/reduction work run
        as generated kernels on CUDA inputs) or "aten" (one ATen call:
        matmul, linear, shape and indexing ops, random ops)."""
        self._ensure_defined()
        return [(kind, list(ops)) for kind, ops in _C.segment_summary(self._id)]

    def segment(self, inputs) -> list:
        """The fusion as execute(inputs) cuts it (segment_summary): one new
        FusionDefinition per segment, in run order. Tensor inputs take any
        size and layout; the sizes ops take (reshape, expand, full, slice,
        pad) are those of these inputs. Each carries `segment_kind` ("fused",
        "aten" or "view"), `segment_inputs` (per input, ("input", i) for
        input i of this fusion or ("segment", j, k) for output k of
        segment j) and `segment_outputs` (per output, the positions among
        this fusion's outputs it is; empty when only later segments read
        it). Running them in order, feeding each its inputs, gives
        execute(inputs)'s outputs. A random op whose seed is drawn from
        torch prints without one (the segment draws its own each run). An
        UnsupportedError says when a size only an ATen segment's result
        knows (it is not run here) or an internal op cannot be printed."""
        self._ensure_defined()
        segments = []
        for kind, text, sources, destinations in _C.segment_definitions(self._id, list(inputs)):
            segment = FusionDefinition()
            with segment:
                exec(text, {"fd": segment, "DataType": DataType})
            segment.segment_kind = kind
            segment.segment_inputs = [
                ("input", i) if j < 0 else ("segment", j, i) for j, i in sources
            ]
            segment.segment_outputs = [list(d) for d in destinations]
            segments.append(segment)
        return segments

    def cuda_code_for(self, inputs, intrinsic_code=False, **kwargs) -> str:
        """The CUDA C++ generated for these inputs, without running it."""
        _check_introspection_kwargs("cuda_code_for", kwargs)
        self._ensure_defined()
        return _C.cuda_code_for(self._id, list(inputs))


def _check_introspection_kwargs(method, kwargs):
    kwargs = dict(kwargs)
    kwargs.pop("override_user_schedule", None)
    if kwargs:
        raise DefinitionTypeError(f"{method}() got unexpected arguments {sorted(kwargs)}")


_reported_options = set()


def report_unused_options(enable_options, disable_options):
    """The predecessor's NVFUSER_ENABLE/DISABLE option names passed to
    execute: nvfuse has no such options, so each name is reported once per
    process (a warning) and otherwise ignored."""
    for kind, names in (("_enable_options", enable_options), ("_disable_options", disable_options)):
        if isinstance(names, str):
            names = [names]
        for name in names or ():
            key = (kind, str(name))
            if key not in _reported_options:
                _reported_options.add(key)
                warnings.warn(
                    f"execute({kind}=[{name!r}]): nvFuser's option {name!r} has "
                    "no meaning in nvfuse and is ignored",
                    stacklevel=3,
                )


def clone(fd, other):
    """Records `fd`'s definition into `other`, as the predecessor's
    clone(fd, other) does: into `other` while it is being defined (inside
    its `with`), or, for a fresh FusionDefinition() not yet defined, as
    its whole definition (the predecessor's helpers clone that way)."""
    if not isinstance(fd, FusionDefinition) or not isinstance(other, FusionDefinition):
        raise DefinitionTypeError(
            "clone(fd, other): both must be FusionDefinitions, got "
            f"{type(fd).__name__} and {type(other).__name__}"
        )
    if other._state is None and other._id is None:
        with other:
            _record_definition_of(fd, other)
        return
    other._require_recording("clone(fd, other)")
    _record_definition_of(fd, other)


def _record_definition_of(fd, other):
    """Replays fd's printed definition into `other`, which is recording."""
    text = repr(fd)
    from ._C import ParallelType
    from .multidevice import DeviceMesh

    namespace = {
        "FusionDefinition": FusionDefinition,
        "DataType": DataType,
        "ParallelType": ParallelType,
        "DeviceMesh": DeviceMesh,
    }
    exec(text, namespace)
    name = text.split("def ", 1)[1].split("(", 1)[0]
    namespace[name](other)


class FusionCache:
    """The process-wide cache of definitions."""

    _instance = None

    @classmethod
    def get(cls, max_fusions=None, selected_device=None, load_from_default_workspace=True):
        """The process's cache, as the predecessor's FusionCache.get. A
        `max_fusions` bounds how many definitions keep their compiled state
        (set_max; nvfuse never refuses to cache a definition). nvfuse takes
        no `selected_device` (each execute runs where its inputs are) and
        has no serialized workspace to load (its disk kernel cache is always
        read): those two are accepted and change nothing."""
        if cls._instance is None:
            cls._instance = cls()
        if max_fusions is not None:
            cls.set_max(max_fusions)
        return cls._instance

    def num_fusions(self) -> int:
        """How many distinct definitions are cached."""
        return _C.num_fusions()

    @staticmethod
    def reset():
        """Forgets every cached fusion. FusionDefinitions made before can no
        longer execute."""
        _C.reset_cache()

    @staticmethod
    def set_max(max_compiled: int):
        """Bounds how many definitions keep their compiled state (kernels,
        schedules, device modules) at once; the least recently executed
        beyond the bound are freed, and rebuilt (from the disk kernel cache)
        when executed again. Definitions themselves stay cached, and sharded
        ones keep their state. Default: NVFUSE_CACHE_MAX, else 1024."""
        if isinstance(max_compiled, bool) or not isinstance(max_compiled, int) or max_compiled < 1:
            raise DefinitionError(
                f"FusionCache.set_max: expected a positive int, got {max_compiled!r}"
            )
        _C.set_max_runtime_states(max_compiled)

    @staticmethod
    def max() -> int:
        """The bound set_max sets."""
        return _C.max_runtime_states()

    @staticmethod
    def num_compiled() -> int:
        """How many (unsharded) definitions hold compiled state now."""
        return _C.num_runtime_states()


__all__ = [
    "FusionDefinition",
    "FusionCache",
    "Tensor",
    "Scalar",
    "Vector",
    "StateKind",
    "clone",
]
