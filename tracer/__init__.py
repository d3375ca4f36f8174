"""mcptrace: the MCP traffic inspector's core (pure: no UI, no mitmproxy)."""

__version__ = "0.1.0"
