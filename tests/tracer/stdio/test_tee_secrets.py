"""Credentials a stdio server is given (its command line, its environment) stay out of the capture
when the server prints them on stderr, as servers do in a start-up banner or a usage error
(`error: unrecognized arguments: --api-key=...`). The header's command was redacted already; the
stderr records kept them. The relay to the host and the message bodies are never altered."""

from __future__ import annotations

import json
import os
import subprocess
import sys

BOUND_S = 60
# A real server process: it says on stderr what it was started with, then echoes its input.
SERVER = (
    "import os, sys\n"
    "print('starting:', *sys.argv[1:], 'token', os.environ['GITHUB_TOKEN'], file=sys.stderr, flush=True)\n"
    "for line in sys.stdin:\n"
    "    sys.stdout.write(line); sys.stdout.flush()\n"
)
SECRETS = (b"sk-live-0123456789", b"tok-abcdef", b"ghp_16C7e42F292c6912E7710c838347Ae178B4a", b"jsonk3y!")
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"note":"sk-live-0123456789"}}\n'


def _tee(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, bytes]:
    cap = tmp_path / "cap.jsonl"
    server = [sys.executable, "-c", SERVER, "--api-key=sk-live-0123456789", "--token", "tok-abcdef"]
    server += ["--config", '{"apiKey": "jsonk3y!"}']
    env = {**os.environ, "GITHUB_TOKEN": SECRETS[2].decode()}
    run = subprocess.run(
        [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(cap), *flags, "--", *server],
        input=PING,
        capture_output=True,
        env=env,
        timeout=BOUND_S,
    )
    assert run.returncode == 0, run.stderr
    return run, cap.read_bytes()


def test_secrets_the_server_echoes_on_stderr_are_redacted_in_the_capture_not_in_the_relay(tmp_path):
    run, capture = _tee(tmp_path)
    records = [json.loads(line) for line in capture.splitlines()]
    (banner,) = [r["text"] for r in records if r["type"] == "stderr"]
    assert banner == (
        'starting: --api-key=<redacted> --token <redacted> --config {"apiKey": "<redacted>"} token <redacted>'
    )
    for secret in SECRETS[1:]:
        assert secret not in capture
    assert all(secret in run.stderr for secret in SECRETS)  # the host sees what the server wrote
    assert run.stdout == PING
    # a message body is the raw bytes, never altered (the capture-format help says so)
    (c2s,) = [r["text"] for r in records if r["type"] == "message" and r["dir"] == "c2s"]
    assert c2s.encode() + b"\n" == PING


def test_no_redact_keeps_what_the_server_printed(tmp_path):
    _, capture = _tee(tmp_path, "--no-redact")
    assert all(secret in capture for secret in SECRETS)


# A server that prints a start-up banner on stdout (no JSON: MCP801's case) naming its token and
# where its key file and agent socket are, then echoes its input.
BANNER_SERVER = (
    "import os, sys\n"
    "print('ready, token', os.environ['GITHUB_TOKEN'], 'key file', os.environ['DEPLOY_KEY_FILE'], flush=True)\n"
    "print('agent at', os.environ['SSH_AUTH_SOCK'], file=sys.stderr, flush=True)\n"
    "for line in sys.stdin:\n"
    "    sys.stdout.write(line); sys.stdout.flush()\n"
)


def test_a_secret_on_a_stdout_line_that_is_no_json_is_hidden_and_paths_of_credentials_are_shown(tmp_path):
    cap = tmp_path / "cap.jsonl"
    key_file = tmp_path / "deploy.key"
    env = {**os.environ, "GITHUB_TOKEN": SECRETS[2].decode(), "DEPLOY_KEY_FILE": str(key_file)}
    env["SSH_AUTH_SOCK"] = "/tmp/ssh-XYZ123/agent.4242"
    ping = PING.replace(b"sk-live-0123456789", SECRETS[2])  # a message naming the token: never altered
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracer",
            "stdio",
            "-q",
            "-o",
            str(cap),
            "--",
            sys.executable,
            "-c",
            BANNER_SERVER,
        ],
        input=ping,
        capture_output=True,
        env=env,
        timeout=BOUND_S,
    )
    assert run.returncode == 0, run.stderr
    banner = f"ready, token {SECRETS[2].decode()} key file {key_file}\n".encode()
    assert run.stdout == banner + ping  # the host gets every byte the server wrote
    records = [json.loads(line) for line in cap.read_bytes().splitlines()]
    s2c = [r["text"] for r in records if r["type"] == "message" and r["dir"] == "s2c"]
    assert s2c == [f"ready, token <redacted> key file {key_file}", ping.decode().rstrip("\n")]
    (stderr,) = [r["text"] for r in records if r["type"] == "stderr"]
    assert stderr == "agent at /tmp/ssh-XYZ123/agent.4242"
