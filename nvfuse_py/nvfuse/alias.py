"""`import nvfuser` that resolves to nvfuse, for clients written against
nvFuser's legacy Python frontend (Lightning Thunder's nvFuser executor among
them) that cannot change their import.

    import nvfuse
    nvfuse.as_nvfuser()      # before the client imports nvfuser
    import thunder           # its nvFuser executor now runs on nvfuse

Opt-in and never a shadow: a real nvFuser that is installed keeps the name
(as_nvfuser raises rather than hide it), and nothing changes until this is
called.
"""

import importlib.util
import sys

from .errors import UnsupportedError


def _real_nvfuser_installed() -> bool:
    existing = sys.modules.get("nvfuser")
    if existing is not None:
        return getattr(existing, "__name__", "") != "nvfuse"
    return importlib.util.find_spec("nvfuser") is not None


def as_nvfuser():
    """Registers nvfuse as the module `nvfuser` (with `nvfuser.pytorch_utils`
    and `nvfuser._C`) for this process; returns the nvfuse module. Calling
    it again is harmless. Raises UnsupportedError when a real nvFuser is
    installed or already imported."""
    import nvfuse

    if sys.modules.get("nvfuser") is nvfuse:
        return nvfuse
    if _real_nvfuser_installed():
        raise UnsupportedError(
            "as_nvfuser(): a real nvFuser is installed (the `nvfuser` module "
            "exists), and nvfuse does not shadow it; uninstall it, or import "
            "nvfuse directly"
        )
    # nvFuser's _C exposes the handle classes; clients test isinstance
    # against nvfuser._C.Scalar.
    for name in ("Tensor", "Scalar", "Vector"):
        if not hasattr(nvfuse._C, name):
            setattr(nvfuse._C, name, getattr(nvfuse, name))
    # nvFuser's sdpfa ops ran torch's flash kernels, and its clients
    # (Thunder's tests) compare their results with flash's bit for bit;
    # cuDNN's attention, nvfuse's default without dropout, rounds apart.
    nvfuse._C.set_cudnn_attention(False)
    sys.modules["nvfuser"] = nvfuse
    sys.modules["nvfuser._C"] = nvfuse._C
    sys.modules["nvfuser.pytorch_utils"] = nvfuse.pytorch_utils
    return nvfuse


def is_nvfuser():
    """Whether as_nvfuser() made this process's `nvfuser` module nvfuse."""
    module = sys.modules.get("nvfuser")
    return module is not None and getattr(module, "__name__", "") == "nvfuse"


def client_spelling(script):
    """A printed definition or repro script as the client that imported
    `nvfuser` expects it: under as_nvfuser() the function is
    `nvfuser_fusion_idN` and the imports are `from nvfuser import ...`
    (tools exec the text and look the function up by that name); else
    unchanged."""
    if not is_nvfuser():
        return script
    return script.replace("nvfuse_fusion_id", "nvfuser_fusion_id").replace(
        "from nvfuse import", "from nvfuser import"
    )


def enable_automatic_serialization():
    """Accepted for compatibility: nvfuse always keeps compiled kernels in
    its disk cache (NVFUSE_CACHE_DIR), so there is nothing to turn on."""


def disable_automatic_serialization():
    """Accepted for compatibility (see enable_automatic_serialization)."""


def serialize():
    """Accepted for compatibility: kernels are already on disk."""
