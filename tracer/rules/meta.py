"""MCP3xx sections 3a, 3b, 3e: `_meta` keys, modern per-request metadata, resultType, error codes."""

from __future__ import annotations
