"""MCP401-MCP410: the legacy initialize lifecycle."""

from __future__ import annotations
