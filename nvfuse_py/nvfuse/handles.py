"""Handles to the values of a FusionDefinition: T (tensor), S (scalar) and
V (vector), named as the repro script names them. Tensor and scalar handles
support Python operators, recorded as the matching fd.ops call."""

from ._C import DataType, StateKind


class _Handle:
    __slots__ = ("_fd", "_ref")

    def __init__(self, fd, ref):
        self._fd = fd
        self._ref = ref

    @property
    def index(self) -> int:
        """Position in the definition (the N of T<N>/S<N>/V<N>)."""
        return self._ref.index

    def __repr__(self) -> str:
        return self._ref.name

    # Comparison operators record ops, so handles hash by identity.
    __hash__ = object.__hash__


def _binary(op_name, reflected=False):
    def method(self, other):
        ops = self._fd.ops
        if reflected:
            return getattr(ops, op_name)(other, self)
        return getattr(ops, op_name)(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{op_name}__"
    return method


def _unary(op_name):
    def method(self):
        return getattr(self._fd.ops, op_name)(self)

    return method


class _Arithmetic(_Handle):
    """Python operators, with torch's meaning: `/` is true division and `%`
    is Python's (torch.remainder)."""

    __slots__ = ()
    __add__ = _binary("add")
    __radd__ = _binary("add", reflected=True)
    __sub__ = _binary("sub")
    __rsub__ = _binary("sub", reflected=True)
    __mul__ = _binary("mul")
    __rmul__ = _binary("mul", reflected=True)
    __truediv__ = _binary("truediv")
    __rtruediv__ = _binary("truediv", reflected=True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", reflected=True)
    __pow__ = _binary("pow")
    __rpow__ = _binary("pow", reflected=True)
    __and__ = _binary("bitwise_and")
    __rand__ = _binary("bitwise_and", reflected=True)
    __or__ = _binary("bitwise_or")
    __ror__ = _binary("bitwise_or", reflected=True)
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _binary("bitwise_xor", reflected=True)
    __lshift__ = _binary("bitwise_left_shift")
    __rlshift__ = _binary("bitwise_left_shift", reflected=True)
    __rshift__ = _binary("bitwise_right_shift")
    __rrshift__ = _binary("bitwise_right_shift", reflected=True)
    __eq__ = _binary("eq")
    __ne__ = _binary("ne")
    __lt__ = _binary("lt")
    __le__ = _binary("le")
    __gt__ = _binary("gt")
    __ge__ = _binary("ge")
    __neg__ = _unary("neg")
    __abs__ = _unary("abs")
    __invert__ = _unary("bitwise_not")
    __hash__ = _Handle.__hash__

    def __bool__(self):
        raise TypeError(
            f"{self!r} is a symbolic value of a FusionDefinition and has no "
            "truth value; use fd.ops.where for a data-dependent choice"
        )


class Tensor(_Arithmetic):
    """A tensor of the definition (T<N> in its repro script)."""

    __slots__ = ("ndim", "dtype")

    def __init__(self, fd, ref, ndim: int, dtype: DataType):
        super().__init__(fd, ref)
        self.ndim = ndim
        self.dtype = dtype

    def __len__(self):
        raise TypeError(f"{self!r} has no length; its rank is {self.ndim}")

    def shape(self):
        """The extents as a vector: fd.ops.shape(self)."""
        return self._fd.ops.shape(self)

    def size(self, dim):
        """The extent of axis `dim` as a scalar: fd.ops.size(self, dim)."""
        return self._fd.ops.size(self, dim)

    # -- multi-device annotations (recorded as fd.sched.* calls) -----------

    def set_device_mesh(self, mesh):
        """Distributes this tensor over `mesh` (nvfuse.multidevice.DeviceMesh)."""
        self._fd.sched._set_device_mesh(self, mesh)

    def split(self, axis, factor, inner_split=True):
        """Splits loop axis `axis`: the inner part `factor` long (or, with
        inner_split=False, the outer part)."""
        self._fd.sched.split(self, axis, factor, inner_split=inner_split)

    def outer_split(self, axis, parts):
        """Splits loop axis `axis` into `parts` outer parts: [D, N/D] for D
        devices, whose outer axis is then parallelized on a mesh axis."""
        self._fd.sched.split(self, axis, parts, inner_split=False)

    def axis(self, index):
        """Loop axis `index`, to parallelize."""
        return _LoopAxis(self, index)


class _LoopAxis:
    """A loop axis of a tensor: `t.axis(0).parallelize(ParallelType.mesh_x)`."""

    __slots__ = ("_tensor", "_index")

    def __init__(self, tensor, index):
        self._tensor = tensor
        self._index = index

    def parallelize(self, parallel_type):
        self._tensor._fd.sched.parallelize(self._tensor, self._index, parallel_type)


class Scalar(_Arithmetic):
    """A scalar of the definition (S<N>): a constant or a symbolic input."""

    __slots__ = ("dtype",)

    def __init__(self, fd, ref, dtype: DataType):
        super().__init__(fd, ref)
        self.dtype = dtype


class Vector(_Handle):
    """A list of integer scalars (V<N>), used as a shape."""

    __slots__ = ("size",)

    def __init__(self, fd, ref, size: int):
        super().__init__(fd, ref)
        self.size = size  # the number of elements, as nvFuser's Vector.size

    def __len__(self):
        return self.size

    def at(self, index):
        """Element `index` (negative counts from the end), a scalar."""
        return self._fd.ops.at(self, index)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.at(i) for i in range(*index.indices(self.size))]
        return self.at(index)

    def __iter__(self):
        return (self.at(i) for i in range(self.size))


def make_handle(fd, ref, state):
    """The handle for state `ref`, with its rank/dtype read from `state`."""
    if ref.kind == StateKind.Tensor:
        return Tensor(fd, ref, state.rank_of(ref), state.dtype_of(ref))
    if ref.kind == StateKind.Scalar:
        return Scalar(fd, ref, state.dtype_of(ref))
    return Vector(fd, ref, state.vector_length(ref))
