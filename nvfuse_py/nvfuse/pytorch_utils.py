"""Conversions between torch dtypes and nvfuse DataTypes, and the rest of
the predecessor's `nvfuser.pytorch_utils` (device properties, the CUDA
cache helpers its test suites import)."""

import functools
import gc
from typing import Union

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

NumberTypeType = Union[type[bool], type[int], type[float], type[complex]]
_PYTHON_TYPES = {
    bool: DataType.Bool,
    int: DataType.Int,
    float: DataType.Double,
    complex: DataType.ComplexDouble,
}


def torch_dtype_to_nvfuser_dtype(dtype):
    """A torch dtype's DataType; the Python number types map as Python
    numbers do (float: Double, int: Int), as in the predecessor."""
    if dtype in _PYTHON_TYPES:
        return _PYTHON_TYPES[dtype]
    return torch_dtype_to_nvfuse_dtype(dtype)


nvfuser_dtype_to_torch_dtype = nvfuse_dtype_to_torch_dtype
python_scalar_to_nvfuser_dtype = python_scalar_dtype


def patch_codegen_so():
    """The predecessor copied its codegen library into torch's; nvfuse
    loads its own module and has nothing to patch."""


def get_device_properties() -> dict:
    """The current CUDA device's properties under the predecessor's keys
    (gpu_name, gpu_sm_count, gpu_gmem_bytes, gpu_l2_bytes, ...,
    gpu_peak_bandwidth_gbps). Raises UnsupportedError without a GPU."""
    from ._device_properties import device_properties

    return device_properties()


def clear_cuda_cache() -> None:
    """Frees torch's cached CUDA memory when over 80% of the device's is
    reserved (the predecessor's test helper)."""
    if not torch.cuda.is_available():
        return
    total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    if torch.cuda.memory_reserved() > 0.8 * total:
        gc.collect()
        torch.cuda.empty_cache()


def retry_on_oom_or_skip_test(func):
    """Test decorator, as the predecessor's: clears the CUDA cache first;
    on out-of-memory, frees what it can and tries once more, then skips
    the test (pytest.skip) rather than failing it."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        clear_cuda_cache()
        try:
            return func(*args, **kwargs)
        except torch.OutOfMemoryError:
            gc.collect()
            torch.cuda.empty_cache()
        try:
            return func(*args, **kwargs)
        except torch.OutOfMemoryError as error:
            import pytest

            pytest.skip(f"out of GPU memory: {error}")

    return wrapper


def __getattr__(name):
    # DEVICE_PROPERTIES, computed on first use: the predecessor computed it
    # at import, which would start CUDA in every process importing nvfuse.
    if name == "DEVICE_PROPERTIES":
        return get_device_properties() if torch.cuda.is_available() else None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
