"""Replay a whole recording: every conversation, one after the other, each on a fresh connection."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tracer.capture import CaptureWriter
from tracer.classify import id_key
from tracer.http.headers import headers_with_prefix
from tracer.redact import PROCESS_HASHER, known_secrets, process_secrets, redact_argv, redact_url
from tracer.redact_echo import header_secrets, url_secrets
from tracer.replay.driver import Replayer, RunResult
from tracer.replay.peers import HttpPeer, Peer, StdioPeer, Tap
from tracer.replay.recording import Conversation, Recording
from tracer.replay.script import Plan, plan


@dataclass
class Target:
    command: list[str] | None = None
    url: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def secrets(self) -> tuple[bytes, ...]:
        """The credentials the server is given, which the new capture hides wherever they show up:
        a command's arguments and environment as the tee learns them, an endpoint's credential
        headers (`--header`) and URL parameters as the proxy learns them."""
        if self.url:
            return known_secrets(header_secrets(self.headers), url_secrets(self.url))
        return process_secrets(self.command or [], os.environ)  # (the server inherits this one)

    @property
    def label(self) -> str:
        """The server as the report names it: credentials in its URL or command line redacted."""
        return redact_url(self.url, PROCESS_HASHER) if self.url else " ".join(redact_argv(self.command or []))


def plans_for(recording: Recording, conns: list[str] | None = None) -> list[Plan]:
    convs: list[Conversation] = [c for c in recording.conversations if conns is None or c.conn in conns]
    return [p for p in (plan(c) for c in convs) if p.steps]


def make_peer(target: Target, tap: Tap, p: Plan, timeout: float) -> Peer:
    if target.url:
        peer = HttpPeer(target.url, tap, headers=target.headers, timeout=timeout)
        # Tool parameters mirrored into headers (x-mcp-header) are derived by the recorded host from the
        # tool's schema; replay sends the recorded ones with the same request.
        for step in p.steps:
            http = step.msg.rec.http if step.msg is not None else None
            if not http or step.exchange is None:
                continue
            params = headers_with_prefix(http.get("req_headers"), "mcp-param-")
            if params and (key := id_key(step.exchange.request.id)) is not None:
                peer.recorded_param_headers[key] = params
        return peer
    assert target.command
    return StdioPeer(target.command, tap)


async def replay_all(
    plans: list[Plan], target: Target, writer: CaptureWriter | None, *, timeout: float
) -> list[RunResult]:
    """Run each plan against the target (PeerError propagates when the server cannot be reached)."""
    results: list[RunResult] = []
    for p in plans:
        tap = Tap(writer, p.conversation.conn, target.transport)
        peer = make_peer(target, tap, p, timeout)
        await peer.start()
        results.append(await Replayer(p, peer, timeout=timeout).run())
    return results
