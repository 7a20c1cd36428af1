import pytest
import torch

import nvfuse.dynamo


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    nvfuse.dynamo.clear_reports()
    yield
    torch._dynamo.reset()


def aten_graph(fn, *inputs):
    """`fn` traced to an ATen FX graph with meta values, as AOTAutograd
    hands it to the backend (functionalized, decomposed)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from nvfuse.dynamo.decompositions import decompositions

    return make_fx(fn, decomposition_table=decompositions(), tracing_mode="fake")(*inputs)
