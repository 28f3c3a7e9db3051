"""The OpenAPI component of the create body and the validator agree, field by field.

Both come from one table (responses_app.create.body.CREATE_BODY); this holds the derivation
to it. For every field, probe values (the limits of its kind and either side of them, each
choice, wrong types, and examples of the structured fields) are put in an otherwise valid
body; the served document's `CreateResponseRequest` accepts a probe exactly when
parse_create_request does, except for the few listed in LOOSER_SCHEMA, where the schema
describes an object's common fields and the validator checks the rest.
"""
import json

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from responses_app.create.body import CREATE_BODY, create_body_schema
from responses_app.create.fields import (
    Boolean, Choice, Custom, Integer, Number, Opaque, Refused, String,
)
from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest

WRONG_TYPES = [True, 1, 1.5, "x", "", [], ["x"], {}]

STRUCTURED = {
    "model": ["m", ""],
    "input": ["hi", [], [{"role": "user", "content": "hi"}],
              [{"type": "message", "role": "user", "content": "hi"}],
              [{"type": "item_reference", "id": "msg_1"}], [{"type": "telepathy"}],
              [{"role": "robot", "content": "hi"}], [7]],
    "include": [["reasoning.encrypted_content"], ["everything"], [1]],
    "conversation": ["conv_1", {"id": "conv_1"}, {"name": "x"}, {"id": ""}],
    "tools": [[{"type": "web_search"}], [{"type": "function", "name": "f"}],
              [{"type": "teleport"}], [{}], ["web_search"]],
    "tool_choice": ["auto", "none", "required", "sometimes", {"type": "function", "name": "f"},
                    {"type": "allowed_tools", "tools": []},
                    {"type": "allowed_tools", "mode": "always", "tools": []},
                    {"type": "function"}],
    "text": [{"format": {"type": "text"}}, {"format": {"type": "json_object"}},
             {"format": {"type": "xml"}}, {"format": None}, {"verbosity": "low"}],
    "reasoning": [{"effort": "low"}, {"effort": "extreme"}, {"summary": "auto"},
                  {"summary": "verbose"}, {"generate_summary": "concise"}],
    "metadata": [{"k": "v"}, {f"k{i}": "v" for i in range(16)},
                 {f"k{i}": "v" for i in range(17)}, {"k": 1}, {"k" * 65: "v"},
                 {"k": "v" * 513}],
    "context_management": [[], [{"type": "compaction"}],
                           [{"type": "compaction", "compact_threshold": 1000}],
                           [{"type": "compaction", "compact_threshold": 0}],
                           [{"type": "compaction", "compact_threshold": "9"}],
                           [{"type": "truncation"}], [{}], {"type": "compaction"}],
    "prompt": [{"id": "pmpt_1"}, {"id": "pmpt_1", "version": "2", "variables": {"a": "b"}},
               {"id": ""}, {"id": "pmpt_1", "version": "x"}, {"id": "pmpt_1", "variables": 3},
               {"id": "pmpt_1", "variables": {"a": 3}}, {"id": "pmpt_1", "other": 1}],
}

# (field, probe as JSON): accepted by the schema, refused by the validator, and why.
LOOSER_SCHEMA = {
    ("tools", '[{"type": "function"}]'): "a function tool's name is checked by the validator",
    ("text", '{"format": {"type": "json_schema"}}'): "json_schema's name and schema likewise",
    ("input", '[{"type": "function_call"}]'): "an item's own fields likewise",
    ("tool_choice", '"required"'): "needs a tool to call: checked against `tools`",
    ("tool_choice", '{"type": "function", "name": "f"}'): "the named tool must be in `tools`",
}
STRUCTURED["tools"].append([{"type": "function"}])
STRUCTURED["text"].append({"format": {"type": "json_schema"}})
STRUCTURED["input"].append([{"type": "function_call"}])


def probes(field) -> list:
    kind = field.kind
    if isinstance(kind, Number):
        middle = (kind.low + kind.high) / 2
        return [kind.low, kind.high, kind.low - 0.5, kind.high + 0.5, middle, *WRONG_TYPES]
    if isinstance(kind, Integer):
        high = [] if kind.high is None else [kind.high, kind.high + 1]
        return [kind.low, kind.low - 1, kind.low + 1, *high, *WRONG_TYPES]
    if isinstance(kind, Choice):
        return [*kind.values, "other", *WRONG_TYPES]
    if isinstance(kind, Boolean | String | Refused):
        return [False, *WRONG_TYPES, {"id": "p"}]
    if isinstance(kind, Opaque):
        return [{"a": [1]}, [{"a": 1}], *WRONG_TYPES]
    assert isinstance(kind, Custom)
    return [*STRUCTURED[field.name], *WRONG_TYPES]


@pytest.fixture(scope="module")
def served():
    """A validator of the create body as the served OpenAPI document describes it."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    component = document["components"]["schemas"]["CreateResponseRequest"]
    assert component == json.loads(json.dumps(create_body_schema()))
    return jsonschema.Draft202012Validator(
        {**component, "components": document["components"]})


def validator_accepts(body) -> bool:
    try:
        parse_create_request(body)
    except InvalidRequest:
        return False
    return True


@pytest.mark.parametrize("field", CREATE_BODY, ids=[field.name for field in CREATE_BODY])
def test_the_document_and_the_validator_agree_on_each_field(served, field):
    disagreements = []
    for probe in [None, *probes(field)]:
        body = {"model": "m", "input": "hi", field.name: probe}
        expected = (True, False) if (field.name, json.dumps(probe)) in LOOSER_SCHEMA else None
        verdicts = (served.is_valid(body), validator_accepts(body))
        if verdicts != (expected or (verdicts[1], verdicts[1])):
            disagreements.append((probe, verdicts))
    assert disagreements == []


@pytest.mark.parametrize("name", ["n", "seed", "messages", "max_tokens"])
def test_a_field_not_in_the_table_is_refused_by_both(served, name):
    body = {"model": "m", "input": "hi", name: 1}
    assert (served.is_valid(body), validator_accepts(body)) == (False, False)


@pytest.mark.parametrize("name", ["model", "input"])
def test_a_required_field_is_required_by_both(served, name):
    body = {"model": "m", "input": "hi"}
    del body[name]
    assert (served.is_valid(body), validator_accepts(body)) == (False, False)


def test_every_structured_field_has_probes():
    custom = {field.name for field in CREATE_BODY if isinstance(field.kind, Custom)}
    assert custom == set(STRUCTURED)
