"""What the passes on Dynamo's graph (before AOTAutograd) read of a node's
value: the fake tensor Dynamo recorded for it as `example_value`."""

import torch


def example_tensor(arg):
    """The tensor Dynamo recorded for `arg` (a graph node), or None where
    `arg` is not a node or its value is not a tensor."""
    if not isinstance(arg, torch.fx.Node):
        return None
    value = arg.meta.get("example_value")
    return value if isinstance(value, torch.Tensor) else None
