import pytest


@pytest.fixture(autouse=True)
def _fresh(fresh_dynamo):
    """Every test here starts with Dynamo and the reports fresh."""


def aten_graph(fn, *inputs):
    """`fn` traced to an ATen FX graph with meta values, as AOTAutograd
    hands it to the backend (functionalized, decomposed)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from nvfuse.dynamo.decompositions import decompositions

    return make_fx(fn, decomposition_table=decompositions(), tracing_mode="fake")(*inputs)
