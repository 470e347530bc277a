"""The building blocks of the request models: the base model, the field types and the rules.

Conventions every request model keeps (as OpenAI's API does): unknown fields are ignored; ``null``
counts as absent for every optional field (each is ``T | None = None``); types are strict
(``true`` is not a number, ``1.0`` not an integer, ``"1"`` not a number).

A rule (``Bounds``, ``NotBlank``, ``Neutral``, ``ConfigRule``) is an annotation on a field's type that
checks the value and adds the JSON Schema keywords saying the same, so that the check and its
documentation are one object. A ``ConfigRule`` depends on the app's ``ServiceConfig``, which is the
validation's context (``RequestBody.parse``) and the schema generation's (``configured``).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError, ValidationInfo
from pydantic_core import core_schema

from .errors import describe, refuse, request_error

if TYPE_CHECKING:
    from ..config import ServiceConfig

Body = TypeVar("Body", bound="RequestBody")
_SCHEMA_CONFIG: ContextVar[ServiceConfig | None] = ContextVar("schema_config", default=None)


@contextmanager
def configured(config: ServiceConfig) -> Iterator[None]:
    """JSON Schemas generated inside are ``config``'s (its ``ConfigRule`` s' keywords)."""
    token = _SCHEMA_CONFIG.set(config)
    try:
        yield
    finally:
        _SCHEMA_CONFIG.reset(token)


class RequestBody(BaseModel):
    """A request body: validated by ``parse``, documented by ``model_json_schema`` (see ``schema``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    @classmethod
    def parse(cls: type[Body], body: Mapping[str, Any], config: ServiceConfig) -> Body:
        """``body`` validated for a server running with ``config`` (``RequestError`` when it is not valid)."""
        try:
            return cls.model_validate(body, context=config)
        except ValidationError as error:
            raise request_error(error) from None


def absent_as_null(body: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``body`` with each of ``names`` it lacks set to null (for a model's ``mode="before"`` validator:
    a required field's rule then says what it says of null, rather than pydantic's "is required")."""
    missing = {name: None for name in names if name not in body}
    return {**body, **missing} if missing else body


def _not_blank() -> str:
    """A pattern that a string matches when ``str.strip()`` leaves something of it: one character
    that is not Python's whitespace (which differs from a regex's ``\\s``: U+001C-U+001F and U+0085
    are whitespace to Python, U+FEFF is not)."""
    spaces = [c for c in range(0x10000) if chr(c).isspace()]  # all of Python's whitespace is in the BMP
    ranges, start = [], spaces[0]
    for previous, c in zip(spaces, spaces[1:] + [-1]):
        if c != previous + 1:
            ranges.append(f"\\u{start:04x}" + (f"-\\u{previous:04x}" if previous > start else ""))
            start = c
    return f"[^{''.join(ranges)}]"


NOT_BLANK = _not_blank()  # a string holding something other than whitespace


class _Rule:
    """A check that runs after the type's own validation, with the JSON Schema keywords it adds."""

    def check(self, value: Any, config: ServiceConfig | None) -> Any:
        raise NotImplementedError

    def keywords(self) -> dict[str, Any]:
        raise NotImplementedError

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.with_info_after_validator_function(self._validate, handler(source))

    def _validate(self, value: Any, info: ValidationInfo) -> Any:
        return self.check(value, info.context)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {**handler(schema), **self.keywords()}


@dataclass(frozen=True)
class Bounds(_Rule):
    """A number in ``[low, high]`` (``(low, high]`` if ``low_open``; no upper bound when ``high`` is
    None). Float bounds make a number field: the value must be finite and is returned as a float."""

    low: float
    high: float | None = None
    low_open: bool = False

    def check(self, value: Any, config: Any) -> Any:
        if isinstance(self.low, float):
            if not math.isfinite(value):
                raise refuse(f"{{path}} must be finite, got {value}")
            if not (self.low < value if self.low_open else self.low <= value) or (
                self.high is not None and value > self.high
            ):
                raise refuse(
                    f"{{path}} must be in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}], got {value:g}"
                )
            return float(value)
        return within(value, self.low, self.high)

    def keywords(self) -> dict[str, Any]:
        low = {"exclusiveMinimum" if self.low_open else "minimum": self.low}
        return {**low, **({} if self.high is None else {"maximum": self.high})}


def within(value: int, low: float, high: float | None) -> int:
    """``value``, refused when outside ``[low, high]`` (no upper bound when ``high`` is None)."""
    if value < low or (high is not None and value > high):
        span = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise refuse(f"{{path}} must be {span}, got {value}")
    return value


@dataclass(frozen=True)
class NotBlank(_Rule):
    """A string holding something besides whitespace (``"{path} must not be empty"``)."""

    def check(self, value: str, config: Any) -> str:
        if not value.strip():
            raise refuse("{path} must not be empty")
        return value

    def keywords(self) -> dict[str, Any]:
        return {"pattern": NOT_BLANK}


@dataclass(frozen=True, eq=False)
class Neutral(_Rule):
    """An OpenAI field this server knows and refuses, unless ``passes(value)``: its neutral values,
    which ``schema`` lists (the only values documented). ``message`` says why, ``{value}`` standing
    for the value sent; ``param`` names the field at fault (a template, see ``errors.refuse``)."""

    passes: Callable[[Any], bool]
    schema: dict[str, Any]
    message: str
    why: str
    param: str = "{path}"

    @classmethod
    def falsy(cls, message: str, why: str) -> Neutral:
        """Refused unless a value Python reads as false (``FALSY``: null, false, 0, "", [] or {})."""
        return cls(lambda v: not v, FALSY, message, why)

    @classmethod
    def only(cls, neutral: Any, message: str, why: str) -> Neutral:
        """Refused unless ``neutral`` (equal to it: 0 and 0.0 alike)."""
        return cls(lambda v: v == neutral, {"enum": [neutral]}, message, why)

    @classmethod
    def null(cls, message: str, why: str) -> Neutral:
        """Refused unless null (or absent)."""
        return cls(lambda v: v is None, {"type": "null"}, message, why)

    def check(self, value: Any, config: Any) -> Any:
        if not self.passes(value):
            raise refuse(self.message.replace("{value}", describe(value)), self.param)
        return value

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {**self.schema, "description": f"not supported ({self.why}): any other value is a 400"}


@dataclass(frozen=True, eq=False)
class Keywords:
    """JSON Schema keywords for a rule that a check beside it (a ``BeforeValidator``) enforces."""

    keywords: dict[str, Any]

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {**handler(schema), **self.keywords}


@dataclass(frozen=True)
class ConfigRule(_Rule):
    """A rule that depends on the app's ``ServiceConfig``: ``check_with(value, config)`` when a
    request is validated, ``schema_for(config)``: the JSON Schema keywords it adds (module docstring).
    ``name`` names it in the errors of a use without a config."""

    name: str
    check_with: Callable[[Any, ServiceConfig], Any]
    schema_for: Callable[[ServiceConfig], dict[str, Any]]

    def check(self, value: Any, config: ServiceConfig | None) -> Any:
        if config is None:
            raise TypeError(f"{self.name}: validate with the ServiceConfig as context (RequestBody.parse)")
        return self.check_with(value, config)

    def keywords(self) -> dict[str, Any]:
        config = _SCHEMA_CONFIG.get()
        if config is None:
            raise TypeError(f"{self.name}: generate the JSON Schema for a ServiceConfig (schema.json_schema)")
        return self.schema_for(config)


# Any value Python reads as false: null, false, 0, "", [], {} (the neutral values of the tool fields, ...).
FALSY = {
    "anyOf": [
        {"type": "null"},
        {"const": False},
        {"const": 0},
        {"const": ""},
        {"type": "array", "maxItems": 0},
        {"type": "object", "maxProperties": 0},
    ]
}
