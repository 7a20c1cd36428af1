"""fd.ops for shape, indexing, sort, creation, random and matmul ops.

Each wrapper spells out its arguments as (keyword, value) pairs for one C++
record (`RecordingState.record_op`), which builds and validates the IR. The
signatures are the predecessor's, so existing definitions run unchanged.
"""

import torch

from ._C import DataType
from .errors import DefinitionTypeError, UnsupportedError
from .handles import Tensor
from .pytorch_utils import torch_dtype_to_nvfuse_dtype


def _int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise DefinitionTypeError(f"{what} must be an int, got {value!r}")
    return int(value)


def _sequence(values, what):
    """`values` as a list; a non-iterable is a DefinitionTypeError naming
    `what` (not Python's bare TypeError)."""
    if isinstance(values, (str, bytes, torch.Tensor)) or not hasattr(values, "__iter__"):
        raise DefinitionTypeError(f"{what} must be a list, got {values!r}")
    return list(values)


def _ints(values, what):
    if isinstance(values, int):
        values = [values]
    return [_int(v, what) for v in _sequence(values, what)]


def _dtype(dtype, what=None):
    """A DataType from a DataType or a torch.dtype."""
    if isinstance(dtype, torch.dtype):
        try:
            return torch_dtype_to_nvfuse_dtype(dtype)
        except TypeError as e:
            where = f"{what}: " if what else ""
            raise DefinitionTypeError(f"{where}{e}") from None
    if not isinstance(dtype, DataType):
        where = f"{what}: " if what else ""
        raise DefinitionTypeError(
            f"{where}dtype must be a nvfuse DataType (e.g. DataType.Float), got {dtype!r}"
        )
    return dtype


class TensorOps:
    """Mixed into fd.ops (see ops.Operators)."""

    def _op(self, method, args):
        """Records fd.ops.<method>; `args` are (keyword, value) pairs whose
        tensors and scalars are already StateRefs."""
        fd = self._fd
        what = f"fd.ops.{method}"

        def record(state):
            refs = state.record_op(what, args)
            return refs[0] if len(refs) == 1 else tuple(refs)

        return fd._record(record, what)

    def _ref(self, value, what):
        return self._fd._operand(value, what)

    def _optional_ref(self, value, what):
        return None if value is None else self._ref(value, what)

    def _sizes(self, values, what):
        return self._fd._shape_operand(values, what)

    # -- sizes and layout ---------------------------------------------------

    def size(self, arg, dim):
        """The extent of axis `dim` of `arg`, as an Int scalar (symbolic for
        a -1 axis: it takes the input's size at execute)."""
        return self._op(
            "size",
            [
                ("", self._ref(arg, "fd.ops.size")),
                ("dim", _int(dim, "fd.ops.size: dim")),
            ],
        )

    def shape(self, arg):
        """The extents of `arg` as a vector (usable wherever a shape is)."""
        return self._op("shape", [("", self._ref(arg, "fd.ops.shape"))])

    def tensor_sizes(self, arg):
        """The extents of `arg` as a list of Int scalars."""
        return [self.size(arg, d) for d in range(arg.ndim)]

    def at(self, arg, index):
        """Element `index` of the vector `arg`, a scalar."""
        return self._op(
            "at",
            [
                ("", self._ref(arg, "fd.ops.at")),
                ("index", _int(index, "fd.ops.at: index")),
            ],
        )

    def stride_order(self, arg, stride_order):
        """`arg` laid out in memory with stride_order[i] the stride rank of
        axis i (0 = fastest); the values and shape are unchanged."""
        return self._op(
            "stride_order",
            [
                ("", self._ref(arg, "fd.ops.stride_order")),
                ("stride_order", _ints(stride_order, "fd.ops.stride_order")),
            ],
        )

    # -- shape ------------------------------------------------------------

    def reshape(self, arg, new_shape, *legacy):
        """`arg` with shape `new_shape` (ints, scalars or a vector; one -1 is
        inferred). The older reshape(arg, original_shape, new_shape) works."""
        if legacy:
            new_shape = legacy[0]
        return self._op(
            "reshape",
            [
                ("", self._ref(arg, "fd.ops.reshape")),
                ("new_shape", self._sizes(new_shape, "fd.ops.reshape")),
            ],
        )

    def permute(self, arg, dims):
        """Output axis i is input axis dims[i]."""
        return self._op(
            "permute",
            [
                ("", self._ref(arg, "fd.ops.permute")),
                ("dims", _ints(dims, "fd.ops.permute: dims")),
            ],
        )

    def squeeze(self, arg, dims, *legacy, squeeze_expanded=False):
        """Removes the size-1 axes `dims`. The older squeeze(arg,
        original_shape, dims) works."""
        if legacy:
            dims = legacy[0]
        return self._op(
            "squeeze",
            [
                ("", self._ref(arg, "fd.ops.squeeze")),
                ("dims", _ints(dims, "fd.ops.squeeze: dims")),
            ],
        )

    def slice(self, arg, start_indices, end_indices, strides=None, manual_normalization=False):
        """arg[start:end:stride] per axis, with Python's index rules
        (negative counts from the end, out-of-range clamps)."""
        what = "fd.ops.slice"
        args = [
            ("", self._ref(arg, what)),
            ("start_indices", self._sizes(start_indices, what)),
            ("end_indices", self._sizes(end_indices, what)),
        ]
        if strides is not None:
            args.append(("strides", self._sizes(strides, what)))
        return self._op("slice", args)

    def pad(self, arg, pad_widths, value=None):
        """torch.nn.functional.pad: (before, after) pairs, last axis first;
        `value` (default 0) fills the new elements."""
        what = "fd.ops.pad"
        return self._op(
            "pad",
            [
                ("", self._ref(arg, what)),
                ("pad_widths", self._sizes(pad_widths, what)),
                ("value", self._optional_ref(value, what)),
            ],
        )

    def cat(self, tensors, dim, manual_padding=False):
        """Concatenation along `dim`."""
        refs = [self._ref(t, "fd.ops.cat") for t in _sequence(tensors, "fd.ops.cat: tensors")]
        return self._op("cat", [("", refs), ("dim", _int(dim, "fd.ops.cat: dim"))])

    # -- indexing ---------------------------------------------------------

    def select(self, arg, index, dim):
        """arg.select(dim, index) (index: an int or scalar): the axis is
        removed."""
        return self._indexed("select", arg, index, dim)

    def _indexed(self, name, arg, index, dim):
        what = f"fd.ops.{name}"
        return self._op(
            name,
            [
                ("", self._ref(arg, what)),
                ("index", self._ref(index, what)),
                ("dim", _int(dim, f"{what}: dim")),
            ],
        )

    def index_select(self, arg, index, dim):
        """torch.index_select: rows `index` (1-D) of axis `dim`."""
        return self._indexed("index_select", arg, index, dim)

    def gather(self, arg1, index, dim):
        """torch.gather: the result has index's shape."""
        return self._indexed("gather", arg1, index, dim)

    def take_along_axis(self, arg1, index, dim):
        """torch.take_along_dim: index and arg1 broadcast off `dim`."""
        return self._indexed("take_along_axis", arg1, index, dim)

    def scatter(self, arg1, index, src, dim):
        """torch.scatter (out of place): arg1 with src written at index. A
        scalar src (a Python number or a scalar) is written everywhere index
        points, as torch.scatter(input, dim, index, value)."""
        what = "fd.ops.scatter"
        if not isinstance(src, Tensor):
            src = self.full(index.shape(), src, arg1.dtype)
        return self._op(
            "scatter",
            [
                ("", self._ref(arg1, what)),
                ("index", self._ref(index, what)),
                ("src", self._ref(src, what)),
                ("dim", _int(dim, f"{what}: dim")),
            ],
        )

    def index_put_accumulate(self, acc, index, value):
        """acc with value[i] added to row index[i] (duplicates accumulate)."""
        what = "fd.ops.index_put_accumulate"
        return self._op(
            "index_put_accumulate",
            [
                ("", self._ref(acc, what)),
                ("", self._ref(index, what)),
                ("", self._ref(value, what)),
            ],
        )

    def embedding_fwd(
        self,
        input,
        weight,
        padding_idx=None,
        max_norm=None,
        norm_type=None,
        scale_grad_by_freq=None,
        sparse=None,
    ):
        """torch.nn.functional.embedding's forward: weight[input]."""
        what = "fd.ops.embedding_fwd"
        return self._op(
            "embedding_fwd",
            [
                ("", self._ref(input, what)),
                ("", self._ref(weight, what)),
                ("padding_idx", self._optional_ref(padding_idx, what)),
                ("max_norm", self._optional_ref(max_norm, what)),
                ("norm_type", self._optional_ref(norm_type, what)),
                (
                    "scale_grad_by_freq",
                    None if scale_grad_by_freq is None else bool(scale_grad_by_freq),
                ),
                ("sparse", None if sparse is None else bool(sparse)),
            ],
        )

    def triu(self, input, diagonal=0):
        """torch.triu over the last two axes."""
        what = "fd.ops.triu"
        return self._op(
            "triu",
            [
                ("", self._ref(input, what)),
                ("diagonal", self._ref(diagonal, what)),
            ],
        )

    def cumsum(self, arg, dim):
        """torch.cumsum; integer and Bool inputs sum in Int."""
        return self._op(
            "cumsum",
            [
                ("", self._ref(arg, "fd.ops.cumsum")),
                ("dim", _int(dim, "fd.ops.cumsum: dim")),
            ],
        )

    # -- sort -----------------------------------------------------------------

    def topk(self, arg, k, dim=-1, largest=True, sorted=False):
        """torch.topk: (values, indices) of the k largest (smallest when
        largest=False) elements along dim; k is an int or an integer scalar.
        Runs as an ATen call between the kernels."""
        what = "fd.ops.topk"
        return self._op(
            "topk",
            [
                ("", self._ref(arg, what)),
                ("k", self._ref(k, f"{what}: k")),
                ("dim", _int(dim, f"{what}: dim")),
                ("largest", bool(largest)),
                ("sorted", bool(sorted)),
            ],
        )

    def argsort(self, arg, dim, descending=False, stable=False):
        """torch.argsort: the Int positions that sort arg along dim. Runs as
        an ATen call between the kernels."""
        what = "fd.ops.argsort"
        return self._op(
            "argsort",
            [
                ("", self._ref(arg, what)),
                ("dim", _int(dim, f"{what}: dim")),
                ("descending", bool(descending)),
                ("stable", bool(stable)),
            ],
        )

    # -- creation and random ------------------------------------------------

    def full(self, shape, fill_value, dtype):
        """A tensor of `shape` filled with `fill_value`."""
        what = "fd.ops.full"
        return self._op(
            "full",
            [
                ("shape", self._sizes(shape, what)),
                ("fill_value", self._ref(fill_value, what)),
                ("dtype", _dtype(dtype, what)),
            ],
        )

    def iota(self, length, start=None, step=None, dtype=DataType.Int):
        """start, start + step, ... (`length` values; defaults 0 and 1)."""
        what = "fd.ops.iota"
        return self._op(
            "iota",
            [
                ("", self._ref(length, what)),
                ("start", self._optional_ref(start, what)),
                ("step", self._optional_ref(step, what)),
                ("dtype", _dtype(dtype, what)),
            ],
        )

    def _random(self, name, a, b, shape, rng_seed, rng_offset, dtype):
        what = f"fd.ops.{name}"
        return self._op(
            name,
            [
                ("", self._ref(a, what)),
                ("", self._ref(b, what)),
                ("shape", self._sizes(shape, what)),
                ("rng_seed", self._optional_ref(rng_seed, what)),
                ("rng_offset", self._optional_ref(rng_offset, what)),
                ("dtype", _dtype(dtype, what)),
            ],
        )

    def uniform(self, minval, maxval, shape, rng_seed=None, rng_offset=None, dtype=DataType.Float):
        """Uniform values in [minval, maxval). Without rng_seed/rng_offset
        each run draws them from torch's generator (torch.manual_seed
        makes runs reproducible)."""
        return self._random("uniform", minval, maxval, shape, rng_seed, rng_offset, dtype)

    def normal(self, mean, std, shape, rng_seed=None, rng_offset=None, dtype=DataType.Float):
        """Normal values with `mean` and `std` (seeding as uniform)."""
        return self._random("normal", mean, std, shape, rng_seed, rng_offset, dtype)

    def _random_like(self, name, arg, rng_seed, rng_offset):
        what = f"fd.ops.{name}"
        return self._op(
            name,
            [
                ("", self._ref(arg, what)),
                ("rng_seed", self._optional_ref(rng_seed, what)),
                ("rng_offset", self._optional_ref(rng_offset, what)),
            ],
        )

    def rand_like(self, arg, rng_seed=None, rng_offset=None):
        """Uniform [0, 1) values with arg's shape and dtype."""
        return self._random_like("rand_like", arg, rng_seed, rng_offset)

    def randn_like(self, arg, rng_seed=None, rng_offset=None):
        """Standard normal values with arg's shape and dtype."""
        return self._random_like("randn_like", arg, rng_seed, rng_offset)

    # -- matmul -------------------------------------------------------------

    def matmul(self, arg1, arg2):
        """torch.matmul (run through ATen / cuBLAS)."""
        return self._op(
            "matmul",
            [
                ("", self._ref(arg1, "fd.ops.matmul")),
                ("", self._ref(arg2, "fd.ops.matmul")),
            ],
        )

    def linear(self, arg1, arg2, bias=None):
        """torch.nn.functional.linear: arg1 @ arg2.T + bias."""
        what = "fd.ops.linear"
        return self._op(
            "linear",
            [
                ("", self._ref(arg1, what)),
                ("", self._ref(arg2, what)),
                ("bias", self._optional_ref(bias, what)),
            ],
        )

    def grouped_mm(self, mat1, mat2, offsets, *block_scaled, **block_scaled_keywords):
        """torch._grouped_mm: one GEMM per group, the groups cut at the Int32
        end positions `offsets` [G] along M (mat1 [M, K], mat2 [G, K, N] ->
        [M, N]), N (mat1 [G, M, K], mat2 [K, N] -> [M, N]) or K (mat1
        [M, K], mat2 [K, N] -> [G, M, N]). Runs as an ATen call. The
        predecessor's block-scaled form (scale1, scale2, alpha, ...) needs
        Float4/Float8_e8m0 types that nvfuse does not have."""
        what = "fd.ops.grouped_mm"
        if block_scaled or block_scaled_keywords:
            raise UnsupportedError(
                f"{what}: the block-scaled form (scale1, scale2, ...) is not "
                "supported; call grouped_mm(mat1, mat2, offsets)"
            )
        return self._op(
            "grouped_mm",
            [
                ("", self._ref(mat1, what)),
                ("", self._ref(mat2, what)),
                ("", self._ref(offsets, what)),
            ],
        )

    # -- attention ----------------------------------------------------------

    def sdpfa_fwd(self, query, key, value, dropout_p=None, is_causal=None, scale=None):
        """Flash attention forward (torch's
        _scaled_dot_product_flash_attention) on [batch, heads, seq, head_dim]
        Half/BFloat16 tensors; returns (output, log_sumexp, philox_seed,
        philox_offset). dropout_p defaults to 0, is_causal to False, scale to
        1/sqrt(head_dim)."""
        what = "fd.ops.sdpfa_fwd"
        return self._op(
            "sdpfa_fwd",
            [
                ("", self._ref(query, what)),
                ("", self._ref(key, what)),
                ("", self._ref(value, what)),
                ("dropout_p", self._optional_ref(dropout_p, what)),
                ("is_causal", self._optional_ref(is_causal, what)),
                ("scale", self._optional_ref(scale, what)),
            ],
        )

    def sdpfa_bwd(
        self,
        grad_output,
        query,
        key,
        value,
        output,
        log_sumexp,
        dropout_p,
        is_causal,
        philox_seed,
        philox_offset,
        scale=None,
    ):
        """Flash attention backward; returns (grad_query, grad_key,
        grad_value). log_sumexp, philox_seed and philox_offset are
        sdpfa_fwd's outputs (the seed and offset replay its dropout)."""
        what = "fd.ops.sdpfa_bwd"
        return self._op(
            "sdpfa_bwd",
            [
                ("", self._ref(grad_output, what)),
                ("", self._ref(query, what)),
                ("", self._ref(key, what)),
                ("", self._ref(value, what)),
                ("", self._ref(output, what)),
                ("", self._ref(log_sumexp, what)),
                ("dropout_p", self._optional_ref(dropout_p, what)),
                ("is_causal", self._optional_ref(is_causal, what)),
                ("philox_seed", self._ref(philox_seed, what)),
                ("philox_offset", self._ref(philox_offset, what)),
                ("scale", self._optional_ref(scale, what)),
            ],
        )
