"""MCP330-MCP332: MRTR retries: every `inputResponses` present and of the right type, and no retry markers outside a retry."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.jsonpath import member
from tracer.model import Analysed, Hit, Severity
from tracer.protocol import MODERN
from tracer.rules.mcp32_mrtr import INPUT_METHODS, MRTR, REQUEST, own_pending, retried_round, retry_params
from tracer.tracking import MRTR_METHODS


def _fits(method: str, value) -> str | None:
    if type(value) is not dict:
        return "is not an object"
    if method == "elicitation/create":
        if value.get("action") not in ("accept", "decline", "cancel"):
            return "is not an ElicitResult (action accept, decline or cancel)"
    elif method == "sampling/createMessage":
        lack = [k for k in ("role", "content", "model") if k not in value]
        if lack:
            return f"is not a CreateMessageResult (lacks {', '.join(lack)})"
    elif method == "roots/list" and type(value.get("roots")) is not list:
        return "is not a ListRootsResult (no roots array)"
    return None


@rule(
    "MCP330",
    "retry-input-responses-incomplete",
    Severity.ERROR,
    kinds=REQUEST,
    versions=MODERN,
    scope="pairing",
    gate=retry_params,
    spec=f"{MRTR}:L251-253, :L264; schema/2026-07-28/schema.ts:L600-606",
)
def retry_input_responses_incomplete(m: Analysed, s):
    """A retry's `inputResponses` lacks keys that were in `inputRequests`: the client MUST construct
    every requested input before retrying. Extra keys are allowed (servers ignore them).

    Example: `inputRequests` had `login` and `city`; the retry's `inputResponses` has only `login`.
    """
    rnd = retried_round(m, s)
    if rnd is None or not rnd.input_requests:
        return None
    got = m.params.get("inputResponses")
    have = got.keys() if type(got) is dict else ()
    missing = [k for k in rnd.input_requests if k not in have]
    if missing:
        return Hit(
            f"inputResponses lacks {', '.join(map(repr, missing))}, requested at seq {rnd.result_seq}",
            path="$.params.inputResponses",
            related_seq=rnd.result_seq,
        )
    return None


@rule(
    "MCP331",
    "input-response-wrong-type",
    Severity.WARNING,
    kinds=REQUEST,
    versions=MODERN,
    scope="pairing",
    gate=retry_params,
    spec=f"{MRTR}:L101-102, :L261",
)
def input_response_wrong_type(m: Analysed, s):
    """An `inputResponses` value does not fit the input request it answers: an `ElicitResult`
    for elicitation, a `CreateMessageResult` for sampling, a `ListRootsResult` for roots.

    Example: the server asked `roots/list` under key `r`; the retry sends `"r": {"action": "accept"}`.
    """
    rnd = retried_round(m, s)
    got = m.params.get("inputResponses") if rnd is not None else None
    if rnd is None or not rnd.input_requests or type(got) is not dict:
        return None
    out = []
    for key, value in got.items():
        asked = rnd.input_requests.get(key)
        method = asked.get("method") if type(asked) is dict else None
        why = _fits(method, value) if method in INPUT_METHODS else None
        if why:
            out.append(
                Hit(
                    f"inputResponses[{key!r}] answers {method} but {why}",
                    path=member("$.params.inputResponses", key),
                    related_seq=rnd.result_seq,
                )
            )
    return out


@rule(
    "MCP332",
    "input-responses-without-round",
    Severity.WARNING,
    kinds=REQUEST,
    versions=MODERN,
    scope="pairing",
    gate=retry_params,
    spec=f"{MRTR}:L257; schema/2026-07-28/schema.ts:L600",
)
def input_responses_without_round(m: Analysed, s):
    """(inferred) `inputResponses` or `requestState` appears on a request that is not the retry of
    an `InputRequiredResult` seen earlier, or on a method that does not support MRTR. They "MUST NOT
    be used for any other request".

    Example: a `tools/list` request carrying `"requestState": "abc"`.
    """
    params = m.params
    if params is None or ("inputResponses" not in params and "requestState" not in params):
        return None
    which = "inputResponses" if "inputResponses" in params else "requestState"
    if m.method not in MRTR_METHODS:
        return Hit(
            f"{m.method} does not take part in MRTR; {which} belongs only on a retried "
            f"tools/call, prompts/get or resources/read",
            path=f"$.params.{which}",
        )
    req = own_pending(m, s)
    if req is not None and req.retry_of is None:
        return Hit(
            f"{which} is sent, but no earlier InputRequiredResult for this {m.method} "
            f"(same name/uri and arguments) was seen",
            path=f"$.params.{which}",
        )
    return None
