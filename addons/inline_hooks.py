"""Hooks of the lean master completed in the turn of the event loop that raised them.

Why: mitmproxy's connection handler starts every hook (requestheaders, request, responseheaders,
response...) as an asyncio task of its own. The layer that raised it waits, and the next turn of
the loop runs the addons, then feeds the layer a `HookCompleted`, which forwards the bytes. Four
hooks of a JSON POST exchange thus cost four tasks and four turns of the loop before the bytes
move on, even when no addon implements the hook (requestheaders, in `mcptrace proxy` without `-s`).

Here the connection's top layer is wrapped (`InlineLayer`): a hook whose handlers are all plain
functions (`LeanAddonManager.inline_ready`) runs as soon as the layer's current event has been
handled, and its `HookCompleted` is handled in the same call. The order is the one mitmproxy's tasks
would give when no handler awaits anything: each hook after the commands raised before it, the
hooks in the order they were raised, each followed by what its completion raises. Anything else
takes mitmproxy's own path, as in mitmdump: a hook with a coroutine handler, a user's `-s` script
loaded (its hooks go through mitmproxy's script machinery), an addon that intercepts the flow (it
waits for the resume), and, to keep that order, every hook raised while one of this connection's
hooks is still on that path.
"""

from __future__ import annotations

from collections import deque

from mitmproxy import flow
from mitmproxy.proxy import commands, events, mode_servers
from mitmproxy.utils import asyncio_utils


class InlineLayer:
    """Stands in for a connection handler's top layer; everything but `handle_event` is the
    layer's own (`context`, ...)."""

    def __init__(self, inner, handler) -> None:
        self.__dict__["inner"] = inner
        self.__dict__["handler"] = handler
        self.__dict__["on_tasks"] = set()  # hooks handed to mitmproxy's tasks, not completed yet

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.inner, name, value)

    def __repr__(self) -> str:
        return f"InlineLayer({self.inner!r})"

    def handle_event(self, event: events.Event):
        manager = self.handler.master.addons
        on_tasks = self.on_tasks
        held: deque[commands.StartHook] = deque()  # hooks completed here, in the order raised
        ev: events.Event | None = event
        while ev is not None:
            if isinstance(ev, events.HookCompleted):
                on_tasks.discard(ev.command)
            for command in self.inner.handle_event(ev):
                if isinstance(command, commands.StartHook):
                    if not on_tasks and manager.inline_ready(command.name):
                        held.append(command)
                        continue
                    on_tasks.add(command)  # (mitmproxy starts its task for it)
                yield command
            ev = None
            while held and ev is None:
                hook = held.popleft()
                rest = manager.run_inline(hook)
                (data,) = hook.args()
                if rest is None and not (isinstance(data, flow.Flow) and data.intercepted):
                    ev = events.HookCompleted(hook)
                    continue
                # a handler awaits, or an addon intercepted the flow: finish as mitmproxy would
                on_tasks.add(hook)
                asyncio_utils.create_task(
                    self._finish(hook, rest),
                    name=f"handle_hook({hook.name})",
                    keep_ref=True,
                    client=self.handler.client.peername,
                )
                for later in held:  # (they follow it, on mitmproxy's path)
                    on_tasks.add(later)
                    yield later
                held.clear()

    async def _finish(self, hook: commands.StartHook, rest) -> None:
        if rest is not None:
            await rest
        (data,) = hook.args()
        if isinstance(data, flow.Flow):
            await data.wait_for_resume()
        await self.handler.server_event(events.HookCompleted(hook))


class InlineHooksHandler(mode_servers.ProxyConnectionHandler):
    """mitmproxy's connection handler; its top layer is wrapped when the master is a lean one."""

    @property
    def layer(self):
        return self._top

    @layer.setter
    def layer(self, value) -> None:
        from addons.lean import LeanAddonManager

        if isinstance(self.master.addons, LeanAddonManager) and not isinstance(value, InlineLayer):
            value = InlineLayer(value, self)
        self._top = value


def install() -> None:
    """mitmproxy's servers build their connection handlers from this module-level name; masters
    that are not lean keep mitmproxy's behaviour (the wrapper is only put on for a lean one)."""
    mode_servers.ProxyConnectionHandler = InlineHooksHandler
