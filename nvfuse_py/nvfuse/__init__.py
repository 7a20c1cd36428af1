"""nvfuse: a JIT fusion compiler for PyTorch on NVIDIA GPUs.

from nvfuse import FusionDefinition, DataType
"""

import torch  # (loads torch's libraries, which _C links against)

import os

from .version import check_torch

check_torch(torch.__version__)
from . import _C
from ._C import DataType, ParallelType


def _find_pip_nvrtc():
    """Lets the C++ side find NVRTC in the nvidia-cuda-nvrtc wheel (a torch
    dependency) before looking in the system's library paths."""
    try:
        import nvidia
    except ImportError:
        return
    for base in nvidia.__path__:
        for sub in ("cu13/lib", "cuda_nvrtc/lib"):
            folder = os.path.join(base, sub)
            if os.path.isdir(folder) and any(
                name.startswith("libnvrtc.so") for name in os.listdir(folder)
            ):
                _C.add_nvrtc_search_directory(folder)


_find_pip_nvrtc()
from .errors import (
    DefinitionError,
    DefinitionTypeError,
    InputError,
    InputTypeError,
    InternalError,
    NvfuseError,
    UnsupportedError,
)
from .fusion_definition import FusionCache, FusionDefinition, clone
from .handles import Scalar, Tensor, Vector
from . import pytorch_utils
from .alias import (
    as_nvfuser,
    disable_automatic_serialization,
    enable_automatic_serialization,
    serialize,
)
from .descriptors import compute_contiguity, compute_tensor_descriptor
from .version import NVFUSER_API_LEVEL, __version__, build_info, version
from .dumps import get_dump, set_dump
from ._C import compile_ahead, set_compile_ahead, set_tiered_compile, tiered_compile

__all__ = [
    "NVFUSER_API_LEVEL",
    "as_nvfuser",
    "clone",
    "compute_contiguity",
    "compute_tensor_descriptor",
    "disable_automatic_serialization",
    "enable_automatic_serialization",
    "serialize",
    "version",
    "build_info",
    "get_dump",
    "set_dump",
    "set_tiered_compile",
    "tiered_compile",
    "set_compile_ahead",
    "compile_ahead",
    "DataType",
    "DefinitionError",
    "DefinitionTypeError",
    "FusionCache",
    "FusionDefinition",
    "InputError",
    "InputTypeError",
    "InternalError",
    "NvfuseError",
    "ParallelType",
    "Scalar",
    "Tensor",
    "UnsupportedError",
    "Vector",
]
