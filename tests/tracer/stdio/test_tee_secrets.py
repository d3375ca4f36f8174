"""Credentials a stdio server is given (its command line, its environment) stay out of the capture
when the server prints them on stderr, as servers do in a start-up banner or a usage error
(`error: unrecognized arguments: --api-key=...`). The header's command was redacted already; the
stderr records kept them. The relay to the host is never altered; in the capture, a credential is
hidden wherever the server echoes it, a JSON message included (kept well-formed, and marked)."""

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
    # the message naming the API key keeps its bytes but for the key, and says so
    (c2s,) = [r for r in records if r["type"] == "message" and r["dir"] == "c2s"]
    assert c2s["text"].encode() + b"\n" == PING.replace(b"sk-live-0123456789", b"<redacted>")
    assert c2s["data"] == {"redacted": 1}


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
    ping = PING.replace(b"sk-live-0123456789", SECRETS[2])  # a message naming the token
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
    assert s2c == [
        f"ready, token <redacted> key file {key_file}",
        PING.decode().rstrip("\n").replace("sk-live-0123456789", "<redacted>"),
    ]
    (stderr,) = [r["text"] for r in records if r["type"] == "stderr"]
    assert stderr == "agent at /tmp/ssh-XYZ123/agent.4242"


# A real server that logs JSON on stdout (as structured loggers do) naming its key, answers a
# tools/call with a result quoting the key (json.dumps escapes its "/" and its quote), and then
# writes a block of 400 messages at once (the capture's bulk path), one of them naming the key.
ECHO_SERVER = (
    "import json, os, sys\n"
    "key, pw = os.environ['OPENAI_API_KEY'], os.environ['DB_PASSWORD']\n"
    "out = sys.stdout\n"
    "out.write(json.dumps({'level': 'info', 'msg': 'using key ' + key}) + '\\n'); out.flush()\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    text = 'configured with ' + key + ' and ' + pw\n"
    "    res = {'content': [{'type': 'text', 'text': text}]}\n"
    "    out.write(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'result': res}) + '\\n'); out.flush()\n"
    "block = [json.dumps({'jsonrpc': '2.0', 'method': 'notifications/message',\n"
    "    'params': {'level': 'info', 'data': 'n%d' % i + (' key ' + key if i == 200 else '')}}) for i in range(400)]\n"
    "out.write('\\n'.join(block) + '\\n'); out.flush()\n"
)
KEY = "sk-proj/abc123DEF456"  # (a "/" some encoders escape)
PASSWORD = 'pa"ss word-9876'  # (a quote every encoder escapes)
CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}\n'


def _echo_tee(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, list[dict], bytes]:
    cap = tmp_path / "cap.jsonl"
    env = {**os.environ, "OPENAI_API_KEY": KEY, "DB_PASSWORD": PASSWORD}
    cmd = [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(cap), *flags, "--"]
    run = subprocess.run(
        [*cmd, sys.executable, "-c", ECHO_SERVER], input=CALL, capture_output=True, env=env, timeout=BOUND_S
    )
    assert run.returncode == 0, run.stderr
    raw = cap.read_bytes()
    return run, [json.loads(line) for line in raw.splitlines()], raw


def test_a_key_in_a_json_log_line_or_a_tool_result_is_hidden_and_the_message_stays_valid_json(tmp_path):
    run, records, raw = _echo_tee(tmp_path)
    assert (
        KEY.encode() in run.stdout and KEY.replace("/", "\\/").encode() not in run.stdout
    )  # relay as written
    for secret in (KEY, json.dumps(KEY)[1:-1], PASSWORD, json.dumps(PASSWORD)[1:-1]):
        assert secret.encode() not in raw
    s2c = [r for r in records if r["type"] == "message" and r["dir"] == "s2c"]
    assert len(s2c) == 402  # the log line, the answer, the block: nothing lost
    log, answer = json.loads(s2c[0]["text"]), json.loads(s2c[1]["text"])  # still JSON
    assert log == {"level": "info", "msg": "using key <redacted>"}
    assert answer["result"]["content"][0]["text"] == "configured with <redacted> and <redacted>"
    assert (s2c[0]["data"], s2c[1]["data"]) == ({"redacted": 1}, {"redacted": 2})
    noted = [r for r in s2c[2:] if "data" in r]
    assert [json.loads(r["text"])["params"]["data"] for r in noted] == ["n200 key <redacted>"]
    assert noted[0]["data"] == {"redacted": 1}
    assert [json.loads(r["text"])["params"]["data"] for r in s2c[2:]][:2] == ["n0", "n1"]


def test_a_key_echoed_in_a_message_is_kept_with_no_redact(tmp_path):
    _, records, raw = _echo_tee(tmp_path, "--no-redact")
    assert KEY.encode() in raw
    assert not any("data" in r for r in records if r["type"] == "message")


def test_lint_of_a_capture_with_a_hidden_key_reads_the_marked_records_without_a_broken_record(tmp_path):
    _echo_tee(tmp_path)
    lint = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--format", "json", str(tmp_path / "cap.jsonl")],
        capture_output=True,
        timeout=BOUND_S,
    )
    assert b"broken capture record" not in lint.stdout + lint.stderr
    assert lint.returncode in (0, 1), lint.stderr


# A real server whose stderr line outgrows the capture's line cap (MAX_STDERR_LINE) right inside
# its token: the capture keeps the line's first bytes only, the token's first KEPT bytes among them.
CUT_SERVER = (
    "import os, sys\n"
    "kept = int(sys.argv[1])\n"
    "line = 'x' * ({cap} - kept) + os.environ['GITHUB_TOKEN'] + ' and more\\n'\n"
    "sys.stderr.write(line); sys.stderr.flush()\n"
    "for line in sys.stdin:\n"
    "    sys.stdout.write(line); sys.stdout.flush()\n"
)


def _cut_tee(tmp_path, kept: int) -> tuple[subprocess.CompletedProcess, dict]:
    from tracer.stdio.capture import MAX_STDERR_LINE

    cap = tmp_path / f"cut{kept}.jsonl"
    env = {**os.environ, "GITHUB_TOKEN": SECRETS[2].decode()}
    server = [sys.executable, "-c", CUT_SERVER.replace("{cap}", str(MAX_STDERR_LINE)), str(kept)]
    run = subprocess.run(
        [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(cap), "--", *server],
        input=PING,
        capture_output=True,
        env=env,
        timeout=BOUND_S,
    )
    assert run.returncode == 0, run.stderr
    (line,) = [json.loads(x) for x in cap.read_bytes().splitlines() if b'"type":"stderr"' in x]
    return run, line


def test_a_token_cut_by_the_stderr_line_cap_does_not_show_its_start_at_the_end_of_the_kept_part(tmp_path):
    run, line = _cut_tee(tmp_path, kept=20)
    assert SECRETS[2] in run.stderr  # the host gets the whole line
    assert not line["text"].endswith(SECRETS[2][:20].decode())
    assert line["text"].endswith("x<redacted>")
    assert line["data"]["redacted"] == 1 and line["data"]["cut"] > 0


def test_a_cut_that_keeps_three_bytes_of_a_token_leaves_them_short_tails_are_not_hidden(tmp_path):
    _, line = _cut_tee(tmp_path, kept=3)  # (MIN_CUT_TAIL: 4 bytes; "ghp" could end innocent text)
    assert line["text"].endswith("x" + SECRETS[2][:3].decode()) and "redacted" not in line["data"]
