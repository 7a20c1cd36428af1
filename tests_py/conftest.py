import os

import pytest
import torch

# Generated kernels write into outputs pre-filled with NaN / -123, so that an
# element a kernel never writes fails the comparison with torch.
os.environ.setdefault("NVFUSE_POISON_OUTPUTS", "1")


def pytest_collection_modifyitems(config, items):
    """GPU tests skip cleanly on machines without CUDA."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fresh_dynamo():
    """torch.compile tests start with Dynamo's caches and nvfuse's backend
    reports empty (use with pytest.mark.usefixtures)."""
    import nvfuse.dynamo

    torch._dynamo.reset()
    nvfuse.dynamo.clear_reports()
    yield
    torch._dynamo.reset()
