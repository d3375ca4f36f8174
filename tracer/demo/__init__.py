"""The bundled demo for `mcptrace demo`: a small dual-era MCP server and a scripted client."""
