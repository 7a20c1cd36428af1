"""fd.ops: the op constructors of a FusionDefinition.

The elementwise ops are generated from the C++ op table (one row per op), so
Python, printing, hashing and evaluation never disagree on what exists.
"""

import inspect

from . import _C
from ._C import DataType
from .errors import DefinitionTypeError
from .composite_ops import CompositeOps
from .tensor_ops import TensorOps, _dtype, _sequence


def _bind_arguments(op_name, parameters, args, kwargs):
    """Positional and keyword arguments in `parameters` order."""
    if len(args) > len(parameters):
        raise DefinitionTypeError(
            f"fd.ops.{op_name}({', '.join(parameters)}) takes {len(parameters)} "
            f"arguments, got {len(args)}"
        )
    values = list(args)
    for name in parameters[len(args) :]:
        if name not in kwargs:
            raise DefinitionTypeError(
                f"fd.ops.{op_name}({', '.join(parameters)}) is missing `{name}`"
            )
        values.append(kwargs.pop(name))
    if kwargs:
        raise DefinitionTypeError(f"fd.ops.{op_name} got unexpected arguments {sorted(kwargs)}")
    return values


def _make_pointwise(name, parameters):
    def op(self, *args, **kwargs):
        values = _bind_arguments(name, parameters, args, kwargs)
        return self._fd._record_pointwise(name, values)

    op.__name__ = name
    op.__qualname__ = f"Operators.{name}"
    # help() and IDEs show the op table's parameters, not (*args, **kwargs).
    op.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in parameters]
    )
    op.__doc__ = (
        f"fd.ops.{name}({', '.join(parameters)}): elementwise {name}. Operands "
        "are tensors, scalars or Python numbers; lower-rank tensors broadcast "
        "over leading axes; the result type follows torch's promotion."
    )
    return op


def _dims_list(dims):
    if dims is None:
        return []
    if isinstance(dims, int):
        return [dims]
    return list(dims)


def _reduced_axes(what, dims, dim):
    """The axes a reduction takes, from `dims` or the predecessor's
    singular keyword `dim`."""
    if dim is not None:
        if dims is not None:
            raise DefinitionTypeError(f"{what}: give dims or dim, not both")
        dims = dim
    return _dims_list(dims)


def _dims_and_dtype(dims, dtype):
    """The predecessor's overload reduction(arg, dtype): a DataType given
    where the dims go is the dtype."""
    if isinstance(dims, DataType):
        if dtype != DataType.Null:
            raise DefinitionTypeError("a reduction got its dtype twice")
        return None, dims
    return dims, dtype


class Operators(TensorOps, CompositeOps):
    """The `fd.ops` namespace of one FusionDefinition."""

    def __init__(self, fd):
        self._fd = fd

    def cast(self, arg, dtype: DataType):
        """`arg` converted to `dtype` (torch's conversion rules)."""
        fd = self._fd
        return fd._record(
            lambda s: s.cast(fd._operand(arg, "fd.ops.cast"), _dtype(dtype, "fd.ops.cast"))
        )

    def broadcast_in_dim(self, arg, shape, broadcast_dims):
        """Input axis i becomes output axis broadcast_dims[i]; the other axes
        of `shape` are new broadcast axes, expanded to their size."""
        fd = self._fd
        tensor = fd._operand(arg, "fd.ops.broadcast_in_dim")
        shape_arg = fd._shape_operand(shape, "fd.ops.broadcast_in_dim")
        return fd._record(lambda s: s.broadcast_in_dim(tensor, shape_arg, list(broadcast_dims)))

    def broadcast(self, arg, is_broadcast_dim):
        """New size-1 axes where is_broadcast_dim is True."""
        fd = self._fd
        tensor = fd._operand(arg, "fd.ops.broadcast")
        flags = [bool(f) for f in _sequence(is_broadcast_dim, "fd.ops.broadcast: is_broadcast_dim")]
        return fd._record(lambda s: s.broadcast(tensor, flags))

    def expand(self, arg, shape):
        """Broadcast axes grow to `shape` (-1 keeps an axis)."""
        fd = self._fd
        tensor = fd._operand(arg, "fd.ops.expand")
        shape_arg = fd._shape_operand(shape, "fd.ops.expand")
        return fd._record(lambda s: s.expand(tensor, shape_arg))

    def _reduction(self, name, arg, dims, keepdim, dtype, dim):
        fd = self._fd
        what = f"fd.ops.{name}"
        dims, dtype = _dims_and_dtype(dims, dtype)
        tensor = fd._operand(arg, what)
        axes = _reduced_axes(what, dims, dim)
        return fd._record(
            lambda s: s.reduction(name, tensor, axes, bool(keepdim), _dtype(dtype, what))
        )

    # Reductions take the predecessor's spellings too: the singular keyword
    # `dim`, and a DataType in the place of `dims` (reduction(arg, dtype)).

    def sum(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None):
        """Sum over `dims` (all when None). Integer inputs sum in Int."""
        return self._reduction("sum", arg, dims, keepdim, dtype, dim)

    def prod(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None):
        """Product over `dims` (all when None)."""
        return self._reduction("prod", arg, dims, keepdim, dtype, dim)

    def max(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None):
        """Maximum over `dims` (all when None); NaN propagates."""
        return self._reduction("max", arg, dims, keepdim, dtype, dim)

    def min(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None):
        """Minimum over `dims` (all when None); NaN propagates."""
        return self._reduction("min", arg, dims, keepdim, dtype, dim)

    def var_mean(self, arg, dims=None, correction=None, keepdim=False, *, unbiased=None, dim=None):
        """(variance, mean) over `dims`; variance divides by N - correction
        (default 1; `unbiased` is the older spelling)."""
        fd = self._fd
        tensor = fd._operand(arg, "fd.ops.var_mean")
        correction = _correction(correction, unbiased)
        axes = _reduced_axes("fd.ops.var_mean", dims, dim)
        return fd._record(lambda s: s.var_mean(tensor, axes, correction, bool(keepdim)))

    def mean(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None):
        """Mean over `dims` (all when None): sum / number of values, for
        floating-point inputs (or a floating-point `dtype`), as torch.mean."""
        fd = self._fd
        dims, dtype = _dims_and_dtype(dims, dtype)
        tensor = fd._operand(arg, "fd.ops.mean")
        axes = _reduced_axes("fd.ops.mean", dims, dim)
        return fd._record(
            lambda s: s.mean(tensor, axes, bool(keepdim), _dtype(dtype, "fd.ops.mean"))
        )

    def welford(self, arg, dims=None):
        """(avg, var_sum, n) over `dims`, as nvFuser's welford: var_sum is the
        sum of squared deviations from avg, n (Int) the count reduced."""
        fd = self._fd
        tensor = fd._operand(arg, "fd.ops.welford")
        return fd._record(lambda s: tuple(s.welford(tensor, _dims_list(dims))))

    def var(self, arg, dims=None, correction=None, keepdim=False, *, unbiased=None, dim=None):
        """Variance over `dims`, dividing by N - correction (default 1)."""
        fd = self._fd
        tensor = fd._operand(arg, "fd.ops.var")
        correction = _correction(correction, unbiased)
        axes = _reduced_axes("fd.ops.var", dims, dim)
        return fd._record(lambda s: s.var(tensor, axes, correction, bool(keepdim)))


def _correction(correction, unbiased):
    if unbiased is not None:
        if correction is not None:
            raise DefinitionTypeError("give either correction or unbiased, not both")
        return 1 if unbiased else 0
    return 1 if correction is None else int(correction)


for _name, _arity, _parameters in _C.pointwise_ops():
    setattr(Operators, _name, _make_pointwise(_name, _parameters.split(",")))

__all__ = ["Operators"]
