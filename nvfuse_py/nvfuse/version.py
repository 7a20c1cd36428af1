"""nvfuse's version, and the level of the predecessor's (nvFuser's) Python
API that it implements.

`version()` answers as nvFuser's did, so that clients which read
`nvfuser.version()` to decide what to hand over (Lightning Thunder among
them) see the API level: "0.2.27+nvfuse.0.1.0" is nvFuser's legacy frontend
at 0.2.27, implemented by nvfuse 0.1.0. Why 0.2.27: from 0.2.28 on, clients
expect the `nvfuser_direct` module next to `nvfuser`, which nvfuse does not
provide (docs/compatibility.md).
"""

import re

__version__ = "0.1.0"
NVFUSER_API_LEVEL = "0.2.27"


def _release(text):
    """(major, minor, patch, ...) of a version string; the local part after
    '+' and any pre-release letters are ignored."""
    text = str(text).split("+", 1)[0]
    return tuple(int(n) for n in re.findall(r"\d+", text))


class ApiVersion(str):
    """A version string that compares as a version: version() >= "0.2.10"
    compares (0, 2, 27) with (0, 2, 10), not the characters."""

    def _key(self, other):
        return _release(self), _release(other)

    def __lt__(self, other):
        a, b = self._key(other)
        return a < b

    def __le__(self, other):
        a, b = self._key(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._key(other)
        return a > b

    def __ge__(self, other):
        a, b = self._key(other)
        return a >= b

    def __eq__(self, other):
        if isinstance(other, str) and "+" in other:
            return str.__eq__(self, other)
        a, b = self._key(other)
        return a == b

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


def version() -> ApiVersion:
    """The predecessor API level and nvfuse's version:
    "<nvFuser API level>+nvfuse.<nvfuse version>"."""
    return ApiVersion(f"{NVFUSER_API_LEVEL}+nvfuse.{__version__}")


def _built_against():
    """(torch version, torch's CUDA version) this build was compiled
    against; None for a source tree that was never installed."""
    try:
        from . import _build_info
    except ImportError:
        return None
    return _build_info.TORCH_VERSION, _build_info.TORCH_CUDA_VERSION


def check_torch(running_torch):
    """Raises ImportError, naming both versions, when the running torch's
    major.minor is not the one nvfuse was built against: the C++ module
    links torch's C++ API, which changes between minor releases."""
    built = _built_against()
    if built is None:
        return
    built_minor = _release(built[0])[:2]
    if built_minor != _release(running_torch)[:2]:
        raise ImportError(
            f"nvfuse {__version__} was built against torch {built[0]} and this process "
            f"has torch {running_torch}; install torch {'.'.join(map(str, built_minor))}.x "
            "or rebuild nvfuse against this torch (pip install --no-build-isolation .)"
        )


def build_info() -> dict:
    """nvfuse's version, the torch and CUDA versions it was built against,
    and those of this process (torch, torch's CUDA, the NVRTC nvfuse
    loads, the GPU): what `python -m nvfuse --version` prints."""
    import torch

    built = _built_against() or ("unknown (source tree)", "")
    info = {
        "nvfuse": __version__,
        "nvfuser_api_level": NVFUSER_API_LEVEL,
        "built_against_torch": built[0],
        "built_against_cuda": built[1] or "none (CPU torch)",
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda or "none (CPU torch)",
    }
    from . import _C

    try:
        info["nvrtc"] = _C.nvrtc_version()
    except Exception as error:  # no NVRTC: say why instead of failing
        info["nvrtc"] = f"not found ({str(error).splitlines()[0]})"
    info["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
    return info
