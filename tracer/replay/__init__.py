"""Replay: re-drive the host's side of a capture against a server and report what changed.

recording (conversations of paired exchanges) -> script (the host's steps and what each waited for)
-> driver (send, answer the server, remap ids, follow MRTR) over peers (stdio / HTTP) -> report
(structural diff per request).
"""
