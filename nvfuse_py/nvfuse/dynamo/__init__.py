"""nvfuse as a torch.compile backend: `torch.compile(model, backend="nvfuse")`
(registered through the torch_dynamo_backends entry point) or
`backend=nvfuse.dynamo.backend`. See docs/torch_compile.md."""

from .backend import GraphReport, OPTIONS, backend, clear_reports, compile_graph, reports

__all__ = ["GraphReport", "OPTIONS", "backend", "clear_reports", "compile_graph", "reports"]
