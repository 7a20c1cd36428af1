"""fd.ops that the predecessor had as single ops and nvfuse builds from other
fd.ops: what they record is the composition, so they fuse, print and cache
like any other definition."""

from ._C import DataType
from .errors import DefinitionTypeError
from .handles import Tensor

_HALF_TYPES = (DataType.Half, DataType.BFloat16)
_INT_BITS = {DataType.Int: 64, DataType.Int32: 32}


class CompositeOps:
    """Mixed into fd.ops (see ops.Operators)."""

    def batch_norm(
        self,
        arg,
        weight,
        bias,
        running_mean,
        running_var,
        momentum,
        eps,
        training,
        channels_last=False,
    ):
        """torch.nn.functional.batch_norm over the channel axis (1, or the
        last with channels_last); returns (output, mean, invstd), the
        per-channel statistics used (in eval mode: running_mean and
        rsqrt(running_var + eps)). In training, running_mean and
        running_var, when given, must be inputs of the definition: they are
        updated in place as torch does (momentum weighs the new batch; the
        running variance takes the unbiased batch variance)."""
        ops = self
        if not isinstance(arg, Tensor) or arg.ndim < 2:
            raise DefinitionTypeError(
                f"fd.ops.batch_norm: arg must be a tensor of rank 2 or more, got {arg!r}"
            )
        channel = arg.ndim - 1 if channels_last else 1
        reduced = [a for a in range(arg.ndim) if a != channel]
        shape = arg.shape()

        def per_channel(t):
            return ops.broadcast_in_dim(t, shape=shape, broadcast_dims=[channel])

        def as_float(t):
            return ops.cast(t, DataType.Float) if t.dtype in _HALF_TYPES else t

        x = as_float(arg)
        if training:
            var, mean = ops.var_mean(x, dims=reduced, correction=0)
            invstd = ops.rsqrt(var + eps)
            if running_mean is not None or running_var is not None:
                self._update_running_stats(
                    arg, reduced, mean, var, running_mean, running_var, momentum
                )
        else:
            if running_mean is None or running_var is None:
                raise DefinitionTypeError(
                    "fd.ops.batch_norm: eval mode (training=False) needs "
                    "running_mean and running_var"
                )
            mean = as_float(running_mean)
            invstd = ops.rsqrt(as_float(running_var) + eps)
        y = (x - per_channel(mean)) * per_channel(invstd)
        if weight is not None:
            y = y * per_channel(as_float(weight))
        if bias is not None:
            y = y + per_channel(as_float(bias))
        if y.dtype != arg.dtype:
            y = ops.cast(y, arg.dtype)
        return y, mean, invstd

    def _update_running_stats(self, arg, reduced, mean, var, running_mean, running_var, momentum):
        ops, fd = self, self._fd
        count = None  # elements per channel, for the unbiased variance
        for axis in reduced:
            size = ops.size(arg, axis)
            count = size if count is None else count * size
        count = ops.cast(count, DataType.Double)
        updates = []
        if running_mean is not None:
            updates.append((running_mean, mean))
        if running_var is not None:
            updates.append((running_var, var * count / (count - 1.0)))
        for stat, batch in updates:
            kept = ops.cast(stat, DataType.Float) if stat.dtype != DataType.Float else stat
            new = kept * (1.0 - momentum) + batch * momentum
            if new.dtype != stat.dtype:
                new = ops.cast(new, stat.dtype)
            fd.add_output(new, alias_input=stat)

    def logical_right_shift(self, a, b):
        """a >> b with zeros shifted in (arithmetic `>>` copies the sign bit),
        for Int and Int32 `a`; the result has a's dtype. A shift by the
        width or more, or by a negative amount, gives 0."""
        ops, fd = self, self._fd
        dtype = getattr(a, "dtype", DataType.Int)
        bits = _INT_BITS.get(dtype)
        if bits is None:
            raise DefinitionTypeError(
                f"fd.ops.logical_right_shift: a must have dtype Int or Int32, got {dtype}"
            )
        # For 1 <= b < bits, a >> b carries b copies of the sign bit on top;
        # `& (max >> (b - 1))` keeps the (bits - b) bits below them.
        in_range = ops.bitwise_and(ops.ge(b, 1), ops.lt(b, bits))
        shifted = ops.bitwise_right_shift(a, ops.where(in_range, b, 0))
        max_value = fd.define_scalar((1 << (bits - 1)) - 1, dtype=dtype)
        mask = ops.bitwise_right_shift(max_value, ops.where(in_range, ops.sub(b, 1), 0))
        zeros_above = ops.where(in_range, ops.bitwise_and(shifted, mask), 0)
        result = ops.where(ops.eq(b, 0), a, zeros_above)
        if result.dtype != dtype:
            result = ops.cast(result, dtype)
        return result
