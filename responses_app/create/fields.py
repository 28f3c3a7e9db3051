"""The kinds of value a field of a request body takes, each its own validator and schema.

A kind is the one place a field's type and limits are written: `parse(value, param)` returns
the normalized value or raises the 400 `InvalidRequest`, and `schema()` is the JSON Schema the
OpenAPI document shows for it, derived from the same limits. `Field` puts a kind under a name
with its default; `null` always means "the default" for an optional field. The create body's
table of fields is responses_app.create.body.
"""
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import InvalidRequest


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict) -> dict:
    """The schema with null allowed as well (null: the field's default)."""
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    if "enum" in schema and "type" not in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    return {"anyOf": [schema, {"type": "null"}]}


def type_error(param: str, expected: str, value) -> InvalidRequest:
    """OpenAI's 400 for a value of the wrong JSON type."""
    return InvalidRequest(f"Invalid type for '{param}': expected {expected}, but got "
                          f"{json_type(value)} instead.", param=param, code="invalid_type")


def json_type(value) -> str:
    """The JSON type of a parsed value, as OpenAI's errors name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def required_string(obj: dict, name: str, param: str) -> str:
    """`obj[name]`, which must be a string (errors name `param.name`)."""
    value = obj.get(name)
    if not isinstance(value, str):
        raise InvalidRequest(f"Missing or invalid '{param}.{name}': must be a string.",
                             param=f"{param}.{name}", code="invalid_value")
    return value


def required_name(obj: dict, name: str, param: str) -> str:
    """`obj[name]`, a non-empty string: a tool's name (OpenAI's 400 `empty_string`)."""
    value = required_string(obj, name, param)
    if not value:
        raise InvalidRequest(f"Invalid '{param}.{name}': empty string. Expected a string with "
                             "minimum length 1, but got an empty string instead.",
                             param=f"{param}.{name}", code="empty_string")
    return value


# Every table that records a model's name (responses, chat completions, usage) holds it in
# a varchar(200): a longer name is the client's 400, before anything is sent or stored.
MODEL_MAX_LENGTH = 200


def checked_model_length(model: str) -> str:
    """`model`, if the tables can record it (OpenAI's 400 `string_above_max_length` if not)."""
    if len(model) > MODEL_MAX_LENGTH:
        raise InvalidRequest(f"Invalid 'model': string too long. Expected a string with "
                             f"maximum length {MODEL_MAX_LENGTH}, but got a string with length "
                             f"{len(model)} instead.", param="model",
                             code="string_above_max_length")
    return model


@dataclass(frozen=True)
class Boolean:
    def parse(self, value, param):
        if not isinstance(value, bool):
            raise type_error(param, "a boolean", value)
        return value

    def schema(self) -> dict:
        return {"type": "boolean"}


@dataclass(frozen=True)
class String:
    def parse(self, value, param):
        if not isinstance(value, str):
            raise type_error(param, "a string", value)
        return value

    def schema(self) -> dict:
        return {"type": "string"}


@dataclass(frozen=True)
class Number:
    """A number from `low` to `high` (inclusive), returned as a float."""
    low: float
    high: float

    def parse(self, value, param):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise type_error(param, "a decimal", value)
        if not self.low <= value <= self.high:
            raise InvalidRequest(f"'{param}' must be between {self.low} and {self.high}.",
                                 param=param, code="invalid_value")
        return float(value)

    def schema(self) -> dict:
        return {"type": "number", "minimum": self.low, "maximum": self.high}


@dataclass(frozen=True)
class Integer:
    """An integer of at least `low` (and at most `high`, if given)."""
    low: int
    high: int | None = None

    def parse(self, value, param):
        if isinstance(value, bool) or not isinstance(value, int):
            raise type_error(param, "an integer", value)
        if value < self.low or (self.high is not None and value > self.high):
            bound = (f"at least {self.low}" if self.high is None
                     else f"between {self.low} and {self.high}")
            raise InvalidRequest(f"'{param}' must be {bound}.", param=param,
                                 code="invalid_value")
        return value

    def schema(self) -> dict:
        schema = {"type": "integer", "minimum": self.low}
        if self.high is not None:
            schema["maximum"] = self.high
        return schema


@dataclass(frozen=True)
class Choice:
    """One of a few strings."""
    values: tuple[str, ...]

    def parse(self, value, param):
        if not isinstance(value, str) or value not in self.values:
            raise InvalidRequest(f"'{param}' must be one of {sorted(self.values)}.",
                                 param=param, code="invalid_value")
        return value

    def schema(self) -> dict:
        return {"enum": list(self.values)}


@dataclass(frozen=True)
class Opaque:
    """A value of one JSON type (`object` or `array`), accepted as it is."""
    json_type: str

    def parse(self, value, param):
        if not isinstance(value, dict if self.json_type == "object" else list):
            raise type_error(param, f"an {self.json_type}", value)
        return value

    def schema(self) -> dict:
        return {"type": self.json_type}


@dataclass(frozen=True)
class Refused:
    """A parameter the gateway refuses with a 400 whenever it is set (not null)."""
    message: str

    def parse(self, value, param):
        raise InvalidRequest(self.message, param=param, code="unsupported_parameter")

    def schema(self) -> dict:
        return {"type": "null", "description": self.message}


@dataclass(frozen=True)
class Custom:
    """A structured value: its parser, and its schema written beside it from the same
    constants (the parser's module keeps the two together)."""
    parser: Callable[[Any, str], Any]
    shape: dict

    def parse(self, value, param):
        return self.parser(value, param)

    def schema(self) -> dict:
        return self.shape


@dataclass(frozen=True)
class Field:
    """One top-level field of a body: its kind, its default (null or absent means the
    default; a list or an object is given as a function that makes a new one) and whether
    it is required."""
    name: str
    kind: Any
    default: Any = None
    required: bool = False
    description: str | None = None
    # False: validated, then left unused (docs/behaviour.md lists these).
    applied: bool = True

    def parse(self, value):
        if value is None:
            if self.required:
                raise InvalidRequest(f"Missing required parameter: '{self.name}'.",
                                     param=self.name, code="missing_required_parameter")
            return self.default() if callable(self.default) else self.default
        return self.kind.parse(value, self.name)

    def schema(self) -> dict:
        schema = dict(self.kind.schema())
        if not self.required and not isinstance(self.kind, Refused):
            schema = nullable(schema)
        if isinstance(self.default, bool | str):
            schema["default"] = self.default
        if self.description:
            schema["description"] = self.description
        return schema


def defer_loading(tool: dict, param: str) -> bool:
    """A tool's `defer_loading`: a boolean, false when left out."""
    value = tool.get("defer_loading")
    if value is not None and not isinstance(value, bool):
        raise InvalidRequest(f"'{param}.defer_loading' must be a boolean.",
                             param=f"{param}.defer_loading", code="invalid_type")
    return bool(value)
