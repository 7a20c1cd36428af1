"""nvfuse as a torch.compile backend: `torch.compile(model, backend="nvfuse")`
(registered through the torch_dynamo_backends entry point) or
`backend=nvfuse.dynamo.backend`. See docs/torch_compile.md."""

from .backend import OPTIONS, backend
from .pipeline import clear_reports, compile_graph, reports
from .report import GraphReport

__all__ = ["GraphReport", "OPTIONS", "backend", "clear_reports", "compile_graph", "reports"]
