"""Conversions between torch dtypes and nvfuse DataTypes."""

import torch

from ._C import DataType

_TORCH_TO_NVFUSE = {
    torch.float64: DataType.Double,
    torch.float32: DataType.Float,
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
    torch.int64: DataType.Int,
    torch.int32: DataType.Int32,
    torch.bool: DataType.Bool,
    torch.complex64: DataType.ComplexFloat,
    torch.complex128: DataType.ComplexDouble,
    torch.float8_e4m3fn: DataType.Float8_e4m3fn,
    torch.float8_e5m2: DataType.Float8_e5m2,
    torch.uint64: DataType.UInt64,
}
_NVFUSE_TO_TORCH = {v: k for k, v in _TORCH_TO_NVFUSE.items()}
_NVFUSE_TO_TORCH[DataType.Index] = torch.int64


def torch_dtype_to_nvfuse_dtype(dtype: torch.dtype) -> DataType:
    """The DataType of a torch dtype; TypeError for dtypes nvfuse lacks."""
    try:
        return _TORCH_TO_NVFUSE[dtype]
    except KeyError:
        supported = ", ".join(str(d).replace("torch.", "") for d in _TORCH_TO_NVFUSE)
        raise TypeError(
            f"torch dtype {dtype} is not supported by nvfuse (supported: {supported})"
        ) from None


def nvfuse_dtype_to_torch_dtype(dtype: DataType) -> torch.dtype:
    """The torch dtype of a DataType; TypeError for DataType.Null."""
    try:
        return _NVFUSE_TO_TORCH[dtype]
    except KeyError:
        raise TypeError(f"{dtype!r} has no torch dtype") from None


def python_scalar_dtype(value) -> DataType:
    """The DataType nvfuse gives a Python number: bool, int, float, complex."""
    if isinstance(value, bool):
        return DataType.Bool
    if isinstance(value, int):
        return DataType.Int
    if isinstance(value, float):
        return DataType.Double
    if isinstance(value, complex):
        return DataType.ComplexDouble
    raise TypeError(f"{type(value).__name__} is not a Python number")


# The predecessor's names, so that `from nvfuser.pytorch_utils import ...`
# runs unchanged through the alias (nvfuse.as_nvfuser).
torch_dtype_to_nvfuser_dtype = torch_dtype_to_nvfuse_dtype
nvfuser_dtype_to_torch_dtype = nvfuse_dtype_to_torch_dtype
python_scalar_to_nvfuser_dtype = python_scalar_dtype
