"""Every endpoint's JSON body read by one parser (responses_app/api/parsers.py): the same
400 for the same bad input everywhere, nothing recursing on the user's data, and a fuzz of
each body the OpenAPI document describes with hostile values planted in it (deep nesting,
lone surrogates, NULs, numbers past 64 bits): a 4xx JSON error or a success, never a 5xx,
never a traceback in the deployment's logs."""
import json
import re

import httpx
import orjson
import pytest
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from responses_app.api.parsers import DEPTH_MESSAGE, MAX_DEPTH, ORJSON_MAX_DEPTH, parse_json
from responses_app.errors import InvalidRequest
from responses_app.create.nul import NUL_MESSAGE, contains_nul


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def nested_objects(depth: int, inner: str = "1") -> str:
    return '{"a":' * depth + inner + "}" * depth


def refusal(body) -> tuple[str, str]:
    with pytest.raises(InvalidRequest) as refused:
        parse_json(body)
    assert (refused.value.status, refused.value.param) == (400, None)
    return refused.value.code, refused.value.message


# --- the parser ----------------------------------------------------------------------------

def test_nesting_is_refused_past_max_depth_whatever_the_containers():
    assert parse_json(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    assert parse_json(nested_objects(MAX_DEPTH)) == json.loads(nested_objects(MAX_DEPTH))
    for body in (nested(MAX_DEPTH + 1), nested_objects(MAX_DEPTH + 1), nested(100_000),
                 nested(2000), '{"a": [' + nested_objects(MAX_DEPTH - 1) + "]}"):
        assert refusal(body.encode()) == ("invalid_json", DEPTH_MESSAGE)
        assert refusal(body) == ("invalid_json", DEPTH_MESSAGE)  # a WebSocket's text frame


def test_orjson_encodes_exactly_its_documented_depth():
    # parsers._within_depth counts on it
    assert orjson.dumps(json.loads(nested(ORJSON_MAX_DEPTH))) == nested(ORJSON_MAX_DEPTH).encode()
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(json.loads(nested(ORJSON_MAX_DEPTH + 1)))


def test_a_nul_is_found_at_any_depth_in_strings_and_keys():
    for body in (nested(MAX_DEPTH - 1, '"a\\u0000"'),
                 nested_objects(MAX_DEPTH - 1, '{"k\\u0000": 1}'), '"\\u0000"'):
        assert refusal(body.encode()) == ("invalid_value", NUL_MESSAGE)
    assert parse_json(nested(MAX_DEPTH - 1, '"a\\\\u0000"').encode()) == json.loads(
        nested(MAX_DEPTH - 1, '"a\\\\u0000"'))  # a backslash, then the text u0000


def test_contains_nul_does_not_recurse():
    value = "\x00"
    for _ in range(100_000):
        value = [value]
    assert contains_nul(value)
    assert not contains_nul({"a": [{"b": "c"}] * 3})


@pytest.mark.parametrize("body, reason", [
    (b'"\\ud800"', "no low surrogate in string: line 1 column 2 (char 1)"),
    (b'{"\\udfff": 1}', "invalid high surrogate in string: line 1 column 3 (char 2)"),
    (b"NaN", "unexpected character, expected a JSON value: line 1 column 1 (char 0)"),
    (b"1e400", "number is infinity when parsed as double: line 1 column 1 (char 0)"),
    (b"\xff", "str is not valid UTF-8: surrogates not allowed: line 1 column 1 (char 0)"),
])
def test_what_no_encoder_could_hold_is_not_json(body, reason):
    assert refusal(body) == (
        "invalid_json", f"We could not parse the JSON body of your request: {reason}.")


# --- every endpoint, the same answers ------------------------------------------------------

BODY_ENDPOINTS = ["/responses", "/responses/input_tokens", "/responses/compact",
                  "/conversations", "/conversations/{conversation}",
                  "/conversations/{conversation}/items"]


@pytest.fixture(scope="module")
def conversation(production, tenant_key):
    with production.client(tenant_key) as client:
        return client.post("/conversations", json={}).json()["id"]


def assert_error(response, status, code, message):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": {"message": message, "type": "invalid_request_error",
                                         "param": None, "code": code}}


@pytest.mark.parametrize("path", BODY_ENDPOINTS)
def test_every_body_endpoint_answers_bad_json_alike(api, production, conversation, path):
    path = path.format(conversation=conversation)
    tracebacks = production.logs().count("Traceback")
    json_type = {"Content-Type": "application/json"}
    body = '{"model": "fake-text", "input": ' + nested(100_000) + "}"
    assert_error(api.post(path, content=body, headers=json_type), 400, "invalid_json",
                 DEPTH_MESSAGE)
    body = '{"model": "fake-text", "input": ' + nested(MAX_DEPTH - 2, '"\\u0000"') + "}"
    assert_error(api.post(path, content=body, headers=json_type), 400, "invalid_value",
                 NUL_MESSAGE)
    assert_error(api.post(path, content='{"model": "fake-text", "input": "\\ud800"}',
                          headers=json_type), 400, "invalid_json",
                 "We could not parse the JSON body of your request: no low surrogate in "
                 "string: line 1 column 34 (char 33).")
    assert production.logs().count("Traceback") == tracebacks


# --- smaller findings: unknown parameters, empty tool names --------------------------------

@pytest.mark.parametrize("path, body", [
    ("/conversations", {"metadata": {}, "colour": "blue"}),
    ("/conversations/{conversation}", {"metadata": {}, "colour": "blue"}),
    ("/conversations/{conversation}/items",
     {"items": [{"role": "user", "content": "hi"}], "colour": "blue"}),
])
def test_conversations_refuse_an_unknown_parameter(api, conversation, path, body):
    before = api.get(f"/conversations/{conversation}/items").json()
    response = api.post(path.format(conversation=conversation), json=body)
    assert response.status_code == 400
    assert response.json() == {"error": {
        "message": "Unknown parameter: 'colour'.", "type": "invalid_request_error",
        "param": "colour", "code": "unknown_parameter"}}
    assert api.get(f"/conversations/{conversation}/items").json() == before


@pytest.mark.parametrize("tool, param", [
    ({"type": "function", "name": ""}, "tools[0].name"),
    ({"type": "custom", "name": ""}, "tools[0].name"),
    ({"type": "namespace", "name": "", "tools": []}, "tools[0].name"),
    ({"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": ""}]},
     "tools[0].tools[0].name"),
])
def test_a_tool_with_an_empty_name_is_refused(api, clean_upstream, tool, param):
    response = api.post("/responses", json={"model": "fake-text", "input": "hi",
                                            "tools": [tool]})
    assert response.status_code == 400
    assert response.json() == {"error": {
        "message": f"Invalid '{param}': empty string. Expected a string with minimum length "
                   "1, but got an empty string instead.",
        "type": "invalid_request_error", "param": param, "code": "empty_string"}}
    assert clean_upstream.requests() == []


# --- the fuzz ------------------------------------------------------------------------------

HOSTILE = [nested(100_000), nested(MAX_DEPTH + 1), nested_objects(600),
           nested(MAX_DEPTH - 3, '"\\u0000"'), '"\\ud800"', '"a\\udfffb"', '{"\\ud83d": 1}',
           '"\\u0000"', '{"k\\u0000": "v"}', "1e400", "-1e400", "18446744073709551616",
           "-9223372036854775809", "1" + "0" * 400, "1e-400", '"' + "x" * 70_000 + '"']
PLACEHOLDER = "__hostile__"
EXAMPLES_PER_OPERATION = 12


def planted(body, path: list, fragment: str) -> str:
    """The body as JSON text with `fragment` (raw JSON text) at `path` (or as the body)."""
    if not path or not isinstance(body, dict | list):
        return fragment
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = PLACEHOLDER
    return json.dumps(body).replace(json.dumps(PLACEHOLDER), fragment, 1)


@st.composite
def spots(draw, body) -> list:
    """A path into a JSON value: to an existing member, a new key, or the root."""
    path, value = [], body
    while isinstance(value, dict | list) and draw(st.booleans()):
        if isinstance(value, dict):
            key = draw(st.sampled_from([*value, "extra"]))
            path.append(key)
            if key not in value:
                break
        else:
            if not value:
                break
            path.append(draw(st.integers(0, len(value) - 1)))
        value = value[path[-1]]
    return path


def body_operations() -> list[tuple[str, str]]:
    """Every operation of the OpenAPI document (generated as the server does) that takes
    a body: a new endpoint is fuzzed as soon as it is documented."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return [(method.upper(), path) for path, methods in document["paths"].items()
            for method, operation in methods.items() if "requestBody" in operation]


BODY_OPERATIONS = body_operations()


@pytest.fixture(scope="module")
def api_schema(production):
    schema = schemathesis.openapi.from_url(f"{production.base_url}/openapi.json")
    schema.config.generation.update(with_security_parameters=False)
    return schema


@pytest.mark.parametrize("method, path", BODY_OPERATIONS,
                         ids=[f"{m} {p}" for m, p in BODY_OPERATIONS])
def test_hostile_values_in_any_body_get_a_4xx_or_success_never_a_5xx(
        api_schema, production, tenant_key, conversation, method, path):
    operation = api_schema[path][method]
    url = production.base_url.removesuffix("/v1") + re.sub(
        r"\{(\w+)\}", lambda name: conversation if name[1] == "conversation_id"
        else f"{name[1]}_missing", path)
    headers = {"Authorization": f"Bearer {tenant_key}", "Content-Type": "application/json"}
    tracebacks = production.logs().count("Traceback")

    @given(case=operation.as_strategy(GenerationMode.POSITIVE), data=st.data())
    @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    def exchange(case, data):
        body = case.body if isinstance(case.body, dict | list) else {}
        fragment = data.draw(st.sampled_from(HOSTILE))
        text = planted(body, data.draw(spots(body)), fragment)
        response = httpx.post(url, content=text.encode("utf-8", "surrogatepass"),
                              headers=headers, timeout=30)
        assert response.status_code < 500, (text[:300], response.text)
        assert response.headers["content-type"] == "application/json"
        if response.status_code >= 400:
            assert set(response.json()["error"]) == {"message", "type", "param", "code"}

    exchange()
    assert production.logs().count("Traceback") == tracebacks
