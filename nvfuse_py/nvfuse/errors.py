"""The exceptions nvfuse raises.

Every error is an :class:`NvfuseError`, which is a ``RuntimeError`` as
every error of the predecessor (nvFuser) was, so clients that catch
``RuntimeError`` keep working. User errors also derive from the built-in
exception that fits (``ValueError``/``TypeError``), so ``except
ValueError`` code works too; their messages name the offending op or
input, what was expected and what was given.
"""

from . import _C


class NvfuseError(RuntimeError):
    """Base class of every nvfuse error (a RuntimeError, as the
    predecessor's errors were)."""


class DefinitionError(NvfuseError, ValueError):
    """A FusionDefinition is malformed: a bad axis, shape, or API use."""


class DefinitionTypeError(NvfuseError, TypeError):
    """An op got an operand of the wrong kind or dtype, or a handle from
    another FusionDefinition."""


class InputError(NvfuseError, ValueError):
    """An execute() input contradicts the definition: count, shape,
    contiguity, stride order or device."""


class InputTypeError(NvfuseError, TypeError):
    """An execute() input has the wrong type or dtype."""


class UnsupportedError(NvfuseError, NotImplementedError):
    """A valid request that nvfuse does not handle yet."""


class InternalError(NvfuseError):
    """A bug in nvfuse. The message carries a repro script; please report it."""


_C._register_error_types(
    DefinitionError,
    DefinitionTypeError,
    InputError,
    InputTypeError,
    UnsupportedError,
    InternalError,
)
