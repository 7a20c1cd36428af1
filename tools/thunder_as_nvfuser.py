"""A pytest plugin (`-p thunder_as_nvfuser`, with tools/ on the path):
nvfuse registered as nvFuser before Thunder's own tests import thunder,
which looks for nvFuser once, when it is first imported."""

import nvfuse

nvfuse.as_nvfuser()
