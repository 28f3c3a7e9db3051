"""Bugs found while running schemathesis: NUL characters, which Postgres text cannot hold
(a clear 400 in a body, a 404 in a path, never a 500), lists where a string was expected
(unhashable: a 500), and unknown routes answered with an HTML CSRF page."""
import io

import pytest

from responses_app.errors import InvalidRequest
from responses_app.api.parsers import JSONBodyParser


def assert_error(response, status, code):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code


@pytest.mark.parametrize("body", [
    {"model": "fake-text\u0000", "input": "hi"},
    {"model": "fake-text", "input": [{"role": "user", "content": "a\u0000b"}]},
    {"model": "fake-text", "input": "hi", "metadata": {"k\u0000": "v"}},
])
def test_a_nul_in_a_create_body_is_a_400(api, body):
    response = api.post("/responses", json=body)
    assert_error(response, 400, "invalid_value")
    assert response.json()["error"]["message"] == (
        "Strings in the request may not contain the NUL character (\\u0000).")


@pytest.mark.parametrize("body, param", [
    ({"model": "fake-text", "input": "hi", "truncation": []}, "truncation"),
    ({"model": "fake-text", "input": [{"type": ["message"]}]}, "input[0].type"),
    ({"model": "fake-text", "input": [{"role": ["user"], "content": "hi"}]}, "input[0].role"),
])
def test_a_list_where_a_string_belongs_is_a_400(api, body, param):
    response = api.post("/responses", json=body)
    assert_error(response, 400, "invalid_value")
    assert response.json()["error"]["param"] == param


def test_a_backslash_u0000_that_is_text_is_accepted(api):
    response = api.post("/responses", json={"model": "fake-text", "input": "a \\u0000 b"})
    assert response.status_code == 200
    assert response.json()["status"] == "completed"


@pytest.mark.parametrize("method, path", [
    ("GET", "/responses/resp_a%00b"), ("DELETE", "/responses/resp_a%00b"),
    ("GET", "/responses/resp_a%00b/input_items"),
])
def test_a_nul_in_a_response_id_is_a_404(api, method, path):
    assert_error(api.request(method, path), 404, "unknown_route")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_an_unknown_route_is_a_json_404_for_every_method(api, method):
    # (it was Django's HTML CSRF page, a 403, for the unsafe methods)
    assert_error(api.request(method, "/no-such-thing"), 404, "unknown_route")


def test_the_drf_views_parse_json_without_nul_characters():
    parser = JSONBodyParser()
    assert parser.parse(io.BytesIO(b'{"metadata": {"k": "a \\\\u0000 b"}}')) == {
        "metadata": {"k": "a \\u0000 b"}}
    with pytest.raises(InvalidRequest) as refused:
        parser.parse(io.BytesIO(b'{"items": [{"text": "a\\u0000b"}]}'))
    assert (refused.value.status, refused.value.code) == (400, "invalid_value")
