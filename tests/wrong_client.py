"""The fixture SDK client (fixtures/sdk/client.py) with one deliberate mistake, for the HTTP door's
attribution tests: after its scripted session it sends `resources/subscribe`, which the fixture
server's capabilities (`"subscribe": false`) do not allow (MCP418, judged against this session's
own handshake). Its request ids count from 1001 instead of 1: the official SDK client's own
counter, started elsewhere, so no other client's session is ever at the same point and every one
of its requests continues only its own sequence, whatever the timing.

    python tests/wrong_client.py --era legacy --url http://127.0.0.1:8788/mcp
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "sdk"))

import client as fixture  # fixtures/sdk/client.py
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

FIRST_ID = 1001
SUBSCRIBED = "fixture://static/greeting"
_dispatcher_init = JSONRPCDispatcher.__init__


def _init(self, *args, **kwargs) -> None:
    _dispatcher_init(self, *args, **kwargs)
    self._next_id = FIRST_ID - 1  # the SDK allocates ids as ++_next_id


class WrongSession(fixture.Session):
    async def run(self) -> bool:
        ok = await super().run()
        try:
            await self.client.subscribe_resource(SUBSCRIBED)
            self.emit("subscribe", uri=SUBSCRIBED, outcome="result")
        except MCPError as exc:  # the server may refuse it: the request went out either way
            self.emit("subscribe", uri=SUBSCRIBED, outcome=exc.error.code)
        return ok


if __name__ == "__main__":
    # (the SDK warns that resources/subscribe is gone at 2026-07-28: this session is 2025-11-25)
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    JSONRPCDispatcher.__init__ = _init
    fixture.Session = WrongSession
    sys.exit(fixture.main())
