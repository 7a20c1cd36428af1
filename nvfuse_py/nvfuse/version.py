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
