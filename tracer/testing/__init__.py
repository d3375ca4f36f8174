"""Testing MCP servers with mcptrace: `McpCapture` (importable without pytest) and the pytest
plugin in tracer/testing/plugin.py (fixtures `mcp_stdio`, `mcp_http`, `mcp_mock`)."""

from tracer.testing.capture import McpCapture, McpCaptureError, McpSpecWarning, lint_capture

__all__ = ["McpCapture", "McpCaptureError", "McpSpecWarning", "lint_capture"]
