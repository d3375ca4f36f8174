"""The official Python SDK's MCPServer in its default configuration, over stdio: one tool, `echo`,
that logs through `Context.log` as the SDK documents. Nothing is configured beyond that, so what it
sends is what every server built this way sends (it logs without declaring the `logging`
capability: the fixture server in fixtures/sdk/ works around that, this one shows it).

    python tests/servers/sdk_default_logging.py
"""

import warnings

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("sdk-default-logging", log_level="WARNING")


@mcp.tool()
async def echo(text: str, ctx: Context) -> str:
    """Echo TEXT back, logging one info line first."""
    with warnings.catch_warnings():  # Context.log is deprecated with Logging in 2026-07-28
        warnings.simplefilter("ignore")
        await ctx.log("info", f"echo {text}", logger_name="sdk-default-logging")
    return text


if __name__ == "__main__":
    mcp.run()
