"""A mitmproxy master that carries only the addons `mcptrace proxy` needs, and dispatches hooks
without mitmproxy's per-addon overhead.

Why: mitmdump loads ~31 default addons and mitmproxy's AddonManager, for every hook of every
flow (about 8 per request, each followed by an `update` hook), walks every addon, looks the
hook up by name and enters a context manager around it. Measured on a keep-alive JSON POST
through a reverse proxy, that dispatch was over half of the proxy's CPU per request.

What stays (the proxy's own machinery): core (option checks, commands), proxyserver, next_layer,
tlsconfig (https upstreams, --mode regular with mitmproxy's CA), script (the user's `-s`
scripts), block (block_global keeps a proxy listening on a public address closed to the
Internet). Per mode: update_alt_svc (reverse), disable_h2c (modes where the host talks
HTTP/1 to the proxy), upstream_auth (upstream), dns_resolver and strip_dns_https_records (dns).
Any other default addon is loaded when the user sets one of its options (`--set anticache=true`
loads anticache), or all of them with `lean=False`.
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Iterable

from mitmproxy import addonmanager, exceptions, flow, hooks, master, options
from mitmproxy.addons import default_addons
from mitmproxy.proxy import mode_specs

from addons import inline_hooks

ALWAYS = ("core", "proxyserver", "nextlayer", "tlsconfig", "scriptloader", "block")
BY_MODE = {
    "reverse": ("updatealtsvc",),
    "regular": ("disableh2c", "proxyauth"),
    "upstream": ("disableh2c", "proxyauth", "upstreamauth"),
    "socks5": ("disableh2c", "proxyauth"),
    "local": ("disableh2c",),
    "transparent": ("disableh2c",),
    "wireguard": ("disableh2c",),
    "dns": ("dnsresolver", "stripdnshttpsrecords"),
}


def _name(addon) -> str:
    return type(addon).__name__.lower()


class _OptionNames:
    """A stand-in for mitmproxy's Loader: records which options an addon declares."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add_option(self, name: str, *_args, **_kwargs) -> None:
        self.names.append(name)

    def add_command(self, *_args, **_kwargs) -> None:
        pass


def _declares(addon) -> list[str]:
    load = getattr(addon, "load", None)
    if load is None:
        return []
    names = _OptionNames()
    load(names)
    return names.names


def needed_addons(modes: Iterable[str], settings: Iterable[str] = (), *, lean: bool = True) -> list:
    """mitmproxy's default addons, in mitmproxy's order, that the MODES and the options the user
    sets (SETTINGS: option names) need. lean=False: all of them, as mitmdump loads them."""
    every = default_addons()
    if not lean:
        return every
    wanted = set(ALWAYS)
    for spec in modes:
        wanted.update(BY_MODE.get(mode_specs.ProxyMode.parse(spec).type_name, ("disableh2c",)))
    settings = set(settings)
    for addon in every if settings else ():
        if _name(addon) not in wanted and settings.intersection(_declares(addon)):
            wanted.add(_name(addon))
    return [a for a in every if _name(a) in wanted]


class LeanAddonManager(addonmanager.AddonManager):
    """mitmproxy's AddonManager with the same semantics (chain order, a failing addon is logged
    and the next one still runs, AddonHalt stops the chain, OptionsError propagates) and a plan
    per hook name: the addons that implement it, looked up once. Addons with children (the script
    loader and its scripts, whose children change on reload) are still walked at every event, but
    only while they have children or implement the hook themselves: the script loader of a proxy
    run without `-s` scripts costs nothing per hook, and no `update` hook follows every event."""

    def __init__(self, master_) -> None:
        super().__init__(master_)
        self._plans: dict[str, list] = {}
        self._inline: dict[str, bool] = {}
        self._parents: list = []  # addons with children (walked at every event)

    def register(self, addon):
        self._forget()
        try:
            return super().register(addon)
        finally:
            self._forget()

    def add(self, *addons) -> None:
        self._forget()
        super().add(*addons)
        self._forget()

    def remove(self, addon) -> None:
        self._forget()
        super().remove(addon)
        self._forget()

    def clear(self) -> None:
        self._forget()
        super().clear()

    def _forget(self) -> None:
        """The chain changed: plans are made again, as they are asked for."""
        self._plans.clear()
        self._inline.clear()
        self._parents = [a for a in self.chain if hasattr(a, "addons")]

    def _plan(self, name: str) -> list:
        plan = []
        for a in self.chain:
            func = getattr(a, name, None)
            if hasattr(a, "addons"):
                # walked at every event (children may change): always when it has a handler itself
                plan.append((a, None, bool(func and callable(func))))
                continue
            if func and callable(func):
                plan.append((a, func, True))
            elif func and not inspect.ismodule(func):
                raise exceptions.AddonManagerError(f"Addon handler {name} ({a}) not callable")
        return plan

    @staticmethod
    def _idle(plan: list) -> bool:
        """Nothing in PLAN would run now: no handler, only addons without children to walk."""
        return all(func is None and not own and not addon.addons for addon, func, own in plan)

    def _plan_for(self, event: hooks.Hook) -> list:
        return self._plan_for_name(event.name)

    def _plan_for_name(self, name: str) -> list:
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = self._plan(name)
        return plan

    async def trigger_event(self, event: hooks.Hook) -> None:
        plan = self._plan_for(event)
        if not plan or self._idle(plan):
            return
        await self._run(plan, event, 0)

    async def _run(self, plan: list, event: hooks.Hook, start: int, awaiting=None) -> None:
        """PLAN's handlers from START on (AWAITING: what the handler before START returned)."""
        args = event.args()
        if awaiting is not None:
            try:
                await awaiting
            except exceptions.AddonHalt:
                return
            except exceptions.OptionsError:
                raise
            except Exception:
                _log_addon_error()
        for addon, func, own in plan[start:]:
            try:
                if func is None:
                    if own or addon.addons:
                        await self.invoke_addon(addon, event)
                else:
                    res = func(*args)
                    if res is not None and inspect.isawaitable(res):
                        await res
            except exceptions.AddonHalt:
                return
            except exceptions.OptionsError:
                raise
            except Exception:
                _log_addon_error()

    # -- hooks completed in the turn that raised them (addons/inline_hooks.py) ---------------------

    def inline_ready(self, name: str) -> bool:
        """Whether hook NAME (and the `update` that would follow it) can run without the event
        loop: every handler a plain function, no addon with children (a user's scripts) to walk."""
        ready = self._inline.get(name)
        if ready is None:
            ready = self._inline[name] = all(
                func is not None and not inspect.iscoroutinefunction(func)
                for _addon, func, _own in self._plan_for_name(name)
                if func is not None or _own
            )
        return ready and not self._walked() and self._idle(self._plan_for_name("update"))

    def _walked(self) -> bool:
        """An addon with children has some now (the script loader with the user's `-s` scripts)."""
        return any(addon.addons for addon in self._parents)

    def run_inline(self, event: hooks.Hook):
        """Run EVENT's handlers now, as trigger_event would (once inline_ready said so). None when
        they are done, else a coroutine that finishes the chain (a handler returned an awaitable)."""
        plan = self._plan_for(event)
        args = event.args()
        for i, (_addon, func, _own) in enumerate(plan):
            if func is None:
                continue  # (an addon without children now: nothing to walk)
            try:
                res = func(*args)
                if res is not None and inspect.isawaitable(res):
                    return self._run(plan, event, i + 1, res)
            except exceptions.AddonHalt:
                return None
            except Exception:  # (OptionsError too: mitmproxy's task would only have logged it)
                _log_addon_error()
        return None

    async def handle_lifecycle(self, event: hooks.Hook) -> None:
        await self.trigger_event(event)
        update = self._plan_for(hooks.UpdateHook([]))
        if update and not self._idle(update):
            message = event.args()[0]
            if isinstance(message, flow.Flow):
                await self.trigger_event(hooks.UpdateHook([message]))


def _log_addon_error() -> None:
    """What mitmproxy's safecall logs for a failing addon, with the same trimmed traceback."""
    etype, value, tb = sys.exc_info()
    tb = addonmanager.cut_traceback(tb, "invoke_addon_sync")
    tb = addonmanager.cut_traceback(tb, "invoke_addon")
    logging.getLogger(addonmanager.__name__).error(f"Addon error: {value}", exc_info=(etype, value, tb))


class LeanMaster(master.Master):
    """A Master whose addon manager is the LeanAddonManager (no termlog: the runner reports), and
    whose connections complete hooks in the turn that raised them (addons/inline_hooks.py)."""

    def __init__(self, opts: options.Options) -> None:
        inline_hooks.install()
        super().__init__(opts, with_termlog=False)
        # (the base class connected its own manager to option changes; only ours may answer them)
        opts.changed.disconnect(self.addons._configure_all)
        self.addons = LeanAddonManager(self)
