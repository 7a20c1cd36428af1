"""NVFUSE_DUMP from Python, and where dumps go.

    nvfuse.set_dump("segments,params")   # from now on, in this process
    nvfuse.set_dump("")                  # nothing
    nvfuse.get_dump()                    # ["params", "segments"]

Dumps go to Python's `logging`, logger "nvfuse" at level INFO, whenever a
handler would take them (`logging.basicConfig(level=logging.INFO)`, or a
handler on "nvfuse"); otherwise to stderr as before, so a dump that was
asked for never disappears. NVFUSE_DUMP in the environment sets the
options at startup; `execute(..., capture_debug_output=True)` still
captures one call's dumps instead.
"""

import atexit
import logging
import sys

from . import _C

logger = logging.getLogger("nvfuse")


def set_dump(options):
    """Dump `options` from now on: a comma-separated string or a list of
    option names (those of NVFUSE_DUMP; "" or [] for none). An unknown name
    raises DefinitionError naming the valid ones."""
    if not isinstance(options, str):
        options = ",".join(options)
    _C.set_dump(options)


def get_dump():
    """The dump options on now, as a list of names."""
    return [name for name in _C.get_dump().split(",") if name]


def _deliver(text):
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        logger.info(text.rstrip("\n"))
    else:
        sys.stderr.write(text)
        sys.stderr.flush()


_C.set_dump_sink(_deliver)
# Dumps written while the process exits (NVFUSE_DUMP=host_time's summary)
# go to stderr: Python is gone by then.
atexit.register(_C.set_dump_sink, None)
