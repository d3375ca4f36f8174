"""Redaction rules one by one: which names are credentials, what is kept readable, session ids as a
stable keyed hash, and that redaction is total (any value) and idempotent."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.capture import record_to_dict
from tracer.model import Direction, Record, RecordType
from tracer.redact import (
    PROCESS_HASHER,
    REDACTED,
    SessionHasher,
    is_secret,
    redact_argv,
    redact_event_data,
    redact_header_record,
    redact_headers,
    redact_http,
    redact_url,
)


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "Proxy-Authorization",
        "Authentication",
        "X-Auth",
        "Token",
        "apikey",
        "X-Api-Key",
        "X-Client-Secret",
        "X-Api-Secret",
        "Cookie",
        "Set-Cookie",
        "X-Amz-Signature",
        "Mcp-Session-Id",
        "password",
        "X-Access-Token",
        "sig",
        "pat",
    ],
)
def test_names_containing_a_credential_word_are_secret(name):
    assert is_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "Content-Type",
        "Accept",
        "User-Agent",
        "MCP-Protocol-Version",
        "Host",
        "WWW-Authenticate",
        "Last-Event-ID",
        "Keep-Alive",
        "author",
        "page",
        "Mcp-Param-Api-Key",
        None,
        3,
    ],
)
def test_ordinary_names_and_auth_challenges_are_not(name):
    assert not is_secret(name)


def test_headers_keep_what_a_reader_needs_and_nothing_secret():
    out = redact_headers(
        [
            ["Authorization", "Bearer abc"],
            ["Cookie", "a=1; b=2"],
            ["Set-Cookie", "s=3; Path=/; HttpOnly"],
            ["Authentication", "t"],
            ["Accept", "x"],
        ]
    )
    assert out == [
        ["Authorization", f"Bearer {REDACTED}"],
        ["Cookie", f"a={REDACTED}; b={REDACTED}"],
        ["Set-Cookie", f"s={REDACTED}; Path=/; HttpOnly"],
        ["Authentication", REDACTED],
        ["Accept", "x"],
    ]


def test_a_redirect_or_referer_url_loses_its_credential_parameters():
    out = redact_headers(
        [
            ["Location", "https://app.example/cb?code=c&state=s"],
            ["Referer", "https://u:p@h/"],
            ["Origin", "https://h"],
        ]
    )
    assert out == [
        ["Location", f"https://app.example/cb?code={REDACTED}&state=s"],
        ["Referer", f"https://u:{REDACTED}@h/"],
        ["Origin", "https://h"],
    ]


def test_a_session_id_is_the_same_hash_each_time_and_differs_from_another_id():
    h = SessionHasher()
    assert h("abc") == h("abc") != h("abd")
    assert h("abc").startswith("hmac:") and "abc" not in h("abc")
    assert SessionHasher()("abc") != h("abc"), "the key is random: the hash says nothing outside this process"
    assert h(h("abc")) == h("abc") and h("") == ""


def test_a_session_id_outside_visible_ascii_stays_flagged_for_mcp720():
    assert PROCESS_HASHER("a b").endswith(" (not visible ASCII)")
    assert not PROCESS_HASHER("ab").endswith(")")


def test_session_ids_are_kept_for_analysis_unless_a_hasher_is_given():
    pairs = [["Mcp-Session-Id", "s-1"]]
    assert redact_headers(pairs) == pairs
    assert redact_headers(pairs, PROCESS_HASHER) == [["Mcp-Session-Id", PROCESS_HASHER("s-1")]]


def test_urls_lose_userinfo_and_credential_parameters_but_stay_readable():
    url = "https://u:pw@h.example:8443/mcp?access_token=t&api_key=k&page=2&sessionId=s#id_token=x&y=1"
    assert redact_url(url) == (
        f"https://u:{REDACTED}@h.example:8443/mcp?access_token={REDACTED}&api_key={REDACTED}"
        f"&page=2&sessionId=s#id_token={REDACTED}&y=1"
    )
    assert f"sessionId={PROCESS_HASHER('s')}" in redact_url(url, PROCESS_HASHER)
    assert redact_url("https://ghp_token@github.com/x") == f"https://{REDACTED}@github.com/x"
    assert redact_url("not a url") == "not a url" and redact_url(None) is None


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["-p", "s", "--port", "80"], ["-p", REDACTED, "--port", "80"]),
        (["--auth", "s", "--author", "me"], ["--auth", REDACTED, "--author", "me"]),
        (["--key", "s", "--pat", "s", "-k", "s"], ["--key", REDACTED, "--pat", REDACTED, "-k", REDACTED]),
        (
            ["--header", "X-Custom-Auth: s", "-H", "Accept: x"],
            ["--header", f"X-Custom-Auth: {REDACTED}", "-H", "Accept: x"],
        ),
        (["--header=X-Api-Key: s"], [f"--header=X-Api-Key: {REDACTED}"]),
        (["https://h/x?api_key=s&q=1"], [f"https://h/x?api_key={REDACTED}&q=1"]),
        (["--url=https://u:s@h/"], [f"--url=https://u:{REDACTED}@h/"]),
        (["--token", "--verbose"], ["--token", "--verbose"]),  # no value to hide: the next word is a flag
        (["API_KEY=s", "Bearer s"], [f"API_KEY={REDACTED}", f"Bearer {REDACTED}"]),
        (
            ["--config", '{"apiKey":"s","region":"eu","auth":{"token":"s"}}'],
            ["--config", '{"apiKey": "<redacted>", "region": "eu", "auth": {"token": "<redacted>"}}'],
        ),
        (['--config={"debug":true}'], ['--config={"debug":true}']),  # nothing to hide: as it was
    ],
)
def test_command_lines_hide_the_values_of_credential_flags_headers_and_urls(argv, shown):
    assert redact_argv(argv) == shown


def test_the_writer_redacts_urls_endpoint_events_and_the_header_record():
    rec = Record(
        RecordType.MESSAGE,
        1,
        1,
        Direction.C2S,
        b"{}",
        "http",
        "c",
        http={
            "method": "POST",
            "url": "http://h/m?sessionId=s&token=t",
            "req_headers": [["Mcp-Session-Id", "s"], ["X-Auth", "a"]],
        },
    )
    d = record_to_dict(rec)
    assert d["http"]["url"] == f"http://h/m?sessionId={PROCESS_HASHER('s')}&token={REDACTED}"
    assert d["http"]["req_headers"] == [["Mcp-Session-Id", PROCESS_HASHER("s")], ["X-Auth", REDACTED]]
    assert record_to_dict(rec, redact=False)["http"] == rec.http and rec.http["req_headers"][1][1] == "a"
    ev = redact_event_data({"event": "endpoint", "uri": "/m?sessionId=s", "url": "http://h/m?sessionId=s"})
    assert ev["uri"] == f"/m?sessionId={PROCESS_HASHER('s')}"
    head = redact_header_record(
        {"type": "header", "upstream": "https://u:p@h/?key=k", "command": ["x", "--token", "t"]}
    )
    assert head["upstream"] == f"https://u:{REDACTED}@h/?key={REDACTED}" and head["command"][-1] == REDACTED


anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(anything, st.text(), st.lists(st.text(max_size=30), max_size=8))
def test_redaction_never_raises_and_a_second_pass_changes_nothing(headers, url, argv):
    once = redact_http({"url": url, "req_headers": headers, "resp_headers": headers}, PROCESS_HASHER)
    assert redact_http(once, PROCESS_HASHER) == once
    shown = redact_argv(argv)
    assert redact_argv(shown) == shown and len(shown) == len(argv)
    assert redact_url(redact_url(url, PROCESS_HASHER), PROCESS_HASHER) == redact_url(url, PROCESS_HASHER)


FORMS = {
    "Authorization": "Bearer {}",
    "Cookie": "c={}; d=1",
    "Set-Cookie": "c={}; Path=/",
    "X-Api-Key": "{}",
    "Token": "{}",
    "Mcp-Session-Id": "{}",
    "X-Client-Secret": "{}",
}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(FORMS)),
            st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.~+/", min_size=8),
        ),
        max_size=6,
    )
)
def test_no_credential_value_survives_in_a_header_list(pairs):
    secrets = ["S3cr" + value for _, value in pairs]
    out = redact_headers(
        [[name, FORMS[name].format(secret)] for (name, _), secret in zip(pairs, secrets, strict=True)],
        PROCESS_HASHER,
    )
    for secret, (_, stored) in zip(secrets, out, strict=True):
        assert secret not in stored


def test_session_rules_still_see_a_bad_session_id_in_a_redacted_capture(tmp_path):
    """MCP720 (characters outside visible ASCII) fires on the stored hash as on the id itself."""
    import json as _json

    from tests.cases import initialize, initialize_result
    from tracer.analyser import analyse_all
    from tracer.capture import CaptureWriter, header_record, read_capture
    from tracer.http.recorder import Exchange, HttpRecorder

    init = initialize()
    answer = initialize_result(capabilities={})
    found = {}
    for redact in (True, False):
        path = tmp_path / f"{redact}.jsonl"
        with CaptureWriter(path, header_record("http"), redact=redact) as w:
            rec = HttpRecorder(w.write_many, redact=redact)
            ex = Exchange(
                "f1",
                "127.0.0.1:5000",
                "POST",
                "http://127.0.0.1:8765/mcp",
                [["Content-Type", "application/json"]],
                _json.dumps(init).encode(),
            )
            rec.request(ex)
            ex.status, ex.resp_headers = (
                200,
                [["Content-Type", "application/json"], ["Mcp-Session-Id", "abc déf"]],
            )
            rec.response(ex, _json.dumps(answer).encode())
        with open(path, "rb") as fh:
            recs = [
                r
                for r in read_capture(fh, str(path))
                if isinstance(r, Record) and r.type is not RecordType.HEADER
            ]
        msgs, ends = analyse_all(recs)
        found[redact] = [f.rule for m in msgs for f in m.findings] + [f.rule for f in ends]
        assert ("déf" in path.read_text()) is not redact
    assert "MCP720" in found[True] and found[True].count("MCP720") == found[False].count("MCP720")


def test_in_memory_http_records_carry_urls_redacted_and_session_ids_kept_for_analysis():
    """What an importer (HAR, .mitm) or a live listener gets from the recorder: no URL credential,
    while the session id stays as sent (the capture writer is what hashes it)."""
    import json as _json

    from tracer.http.recorder import Exchange, HttpRecorder

    out: list[Record] = []
    rec = HttpRecorder(out.extend, redact=True)
    ex = Exchange(
        "f1",
        "127.0.0.1:5000",
        "POST",
        "http://u:pw@127.0.0.1:8765/mcp?api_key=k&x=1",
        [["Content-Type", "application/json"], ["Mcp-Session-Id", "s-1"], ["X-Api-Secret", "v"]],
        _json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode(),
    )
    rec.request(ex)
    http = out[0].http
    assert http["url"] == f"http://u:{REDACTED}@127.0.0.1:8765/mcp?api_key={REDACTED}&x=1"
    assert ["Mcp-Session-Id", "s-1"] in http["req_headers"] and ["X-Api-Secret", REDACTED] in http[
        "req_headers"
    ]
    assert ex.url.endswith("api_key=k&x=1"), "the exchange itself is left as it was"


def test_argv_secrets_are_the_values_redact_argv_hides_from_every_kind_of_argument():
    from tracer.redact import argv_secrets

    argv = ["srv", "--api-key=SEKRET123", "--token", "SEKRET456", "-p", "pw12", "--config"]
    argv += ['{"apiKey": "jsonsecret", "n": 1}', "API_KEY=envsecret", "Bearer bearer123"]
    argv += ["https://u:pass1234@h/x?api_key=qk1234&x=1", "-H", "Authorization: Bearer hdr12345", "--verbose"]
    assert argv_secrets(argv) == [
        "SEKRET123", "SEKRET456", "pw12", "jsonsecret", "envsecret", "bearer123", "pass1234", "qk1234", "hdr12345"
    ]  # fmt: skip


def test_env_secrets_are_long_values_of_credential_named_variables():
    from tracer.redact import env_secrets

    env = {"GITHUB_TOKEN": "ghp_abcdefgh12", "PATH": "/usr/bin:/bin", "USE_AUTH": "true", "API_KEY": 5}
    assert env_secrets(env) == ["ghp_abcdefgh12"]
    assert env_secrets(None) == []


def test_env_secrets_leave_out_paths_of_credentials_and_keep_credentials_that_look_like_paths(tmp_path):
    from tracer.redact import env_secrets

    creds = tmp_path / "creds.json"
    creds.write_text("{}")
    places = {
        "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.12",
        "GPG_KEY_FILE": "/home/me/.gnupg/key.asc",
        "VAULT_TOKEN_PATH": "~/.vault-token",
        "WIN_KEY_PATH": "C:\\Users\\me\\key.pem",
        "GOOGLE_APPLICATION_CREDENTIALS": str(creds),  # (no place word: the file is there)
    }
    kept = {
        "AWS_SECRET_ACCESS_KEY": "/kLx+abcdefghijk/lmnopq",  # (base64: may start with "/")
        "SERVICE_TOKEN": str(tmp_path / "no-such-file"),
        "TLS_KEY_FILE": "-----BEGIN PRIVATE KEY----- MIIEv",  # (the key itself, not its path)
    }
    assert env_secrets({**places, **kept}) == list(kept.values())


def test_argv_secrets_finds_a_header_value_written_without_spaces_as_mcp_remote_documents_it():
    from tracer.redact import argv_secrets

    # mcp-remote's README: "--header", "Authorization:${AUTH_HEADER}" (no space: some hosts split
    # arguments at spaces); redact_argv shows it as "Authorization: Bearer <redacted>"
    argv = ["npx", "mcp-remote", "https://x/mcp", "--header", "Authorization:Bearer sk-abc12345"]
    argv += ["-H", "X-API-Key:key98765", "--header=x-api-key:key55555"]
    assert argv_secrets(argv) == ["sk-abc12345", "key98765", "key55555"]
