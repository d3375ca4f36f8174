"""The pydantic models of the files mcptrace reads besides captures: `[tool.mcptrace]` and
baseline files, with their one-line error messages.

Kept apart from tracer/config.py so that finding a config file never imports pydantic: only a file
that exists is validated. (Capture records are read on the hot path by their own typed reader.)
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Required, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

_RULE_ID = re.compile(r"^MCP\d{0,3}$")
Severity = Literal["info", "warning", "error"]
FailOn = Literal["info", "warning", "error", "never"]
OutputFormat = Literal["text", "json", "sarif", "junit", "github"]


def _rule_ids(value: list[str]) -> list[str]:
    for item in value:
        if not _RULE_ID.match(item):
            raise ValueError(f"a rule id or prefix such as MCP310 or MCP3, got {item!r}")
    return value


class ProjectConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False, frozen=True)

    select: list[StrictStr] | None = None
    ignore: list[StrictStr] | None = None
    per_file_ignores: dict[StrictStr, list[StrictStr]] = Field(default_factory=dict, alias="per-file-ignores")
    severity: dict[StrictStr, Severity] = Field(default_factory=dict)
    fail_on: FailOn = Field(default="error", alias="fail-on")
    baseline: StrictStr | None = None
    format: OutputFormat = "text"
    capture_dir: StrictStr | None = Field(default=None, alias="capture-dir")
    redact: list[StrictStr] = Field(default_factory=list)

    @field_validator("select", "ignore")
    @classmethod
    def _ids(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _rule_ids(value)

    @field_validator("per_file_ignores")
    @classmethod
    def _file_ids(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for ids in value.values():
            _rule_ids(ids)
        return value

    @field_validator("severity")
    @classmethod
    def _severity_ids(cls, value: dict[str, str]) -> dict[str, str]:
        _rule_ids(list(value))
        return value

    @field_validator("redact")
    @classmethod
    def _headers(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
                raise ValueError(f"HTTP header names, got {name!r}")
        return value


_EXPECTED = {
    "list_type": "a list of strings",
    "string_type": "a string",
    "dict_type": "a table",
    "literal_error": None,  # pydantic's own text names the allowed values
}


def _describe(err: dict) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    key = loc[0] if loc else "?"
    rest = "".join(f"[{p!r}]" if not p.isdigit() else f"[{p}]" for p in loc[1:])
    if err.get("type") == "extra_forbidden":
        known = ", ".join(f.alias or name for name, f in ProjectConfig.model_fields.items())
        return f"unknown key {key!r} (known keys: {known})"
    got = err.get("input")
    shown = repr(got) if isinstance(got, (str, int, float, bool)) else type(got).__name__
    kind = err.get("type", "")
    if kind == "value_error":
        what = str(err.get("ctx", {}).get("error", err.get("msg", "")))
        return f"{key}{rest}: expected {what}"
    if kind == "literal_error":
        return f"{key}{rest}: expected {err['ctx']['expected']} (got {shown})"
    expected = _EXPECTED.get(kind) or err.get("msg", "a different value").lower()
    return f"{key}{rest}: expected {expected} (got {shown})"


def validate(table: Any, source: str, error: type[Exception] = ValueError) -> dict[str, Any]:
    """The table's values by their config names, only the keys it sets; ERROR (tracer.config passes
    its ConfigError: this module does not import it back) on the first problem, as
    `FILE: [tool.mcptrace] KEY: expected ...`."""
    if not isinstance(table, dict):
        raise error(f"{source}: [tool.mcptrace] must be a table")
    try:
        model = ProjectConfig.model_validate(table)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise error(f"{source}: [tool.mcptrace] {_describe(first)}") from None
    dumped = model.model_dump(by_alias=True)
    return {k: dumped[k] for k in table}


class BaselineEntry(TypedDict, total=False):
    """One entry of a baseline file (tracer/baseline.py); keys a later mcptrace may add are ignored.
    A TypedDict, not a model: a baseline can hold 100,000 entries, and dicts validate ~3x faster."""

    __pydantic_config__ = ConfigDict(extra="ignore", strict=True)  # type: ignore[misc]
    fingerprint: Required[StrictStr]
    rule: Required[StrictStr]
    file: StrictStr
    message: StrictStr
    count: Annotated[StrictInt, Field(ge=1)]  # a count below 1 would suppress without end


_BASELINE_ENTRIES = TypeAdapter(list[BaselineEntry])


def baseline_entries(items: Any, source: str) -> list[BaselineEntry]:
    """A baseline's `findings` list, checked; ValueError naming the first bad entry and field."""
    try:
        return _BASELINE_ENTRIES.validate_python(items)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = err.get("loc", ())
        where = "findings" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        got = err.get("input")
        shown = repr(got) if isinstance(got, (str, int, float, bool)) or got is None else type(got).__name__
        what = "a value" if err.get("type") == "missing" else shown
        raise ValueError(
            f"baseline {source} has a malformed entry: {where}: {err.get('msg', 'invalid').lower()} "
            f"(got {what})"
        ) from None
