"""nvfuse: a JIT fusion compiler for PyTorch on NVIDIA GPUs.

    from nvfuse import FusionDefinition, DataType
"""

import torch  # noqa: F401  (loads torch's libraries, which _C links against)

from . import _C
from ._C import DataType, ParallelType
from .errors import (
    DefinitionError,
    DefinitionTypeError,
    InputError,
    InputTypeError,
    InternalError,
    NvfuseError,
    UnsupportedError,
)
from .fusion_definition import FusionCache, FusionDefinition
from .handles import Scalar, Tensor, Vector

__version__ = "0.1.0"

__all__ = [
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
