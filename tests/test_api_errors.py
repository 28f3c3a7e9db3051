"""Bad input gets an OpenAI-shaped JSON error with the right status, and nothing is stored.

POST /v1/responses is driven through the real ASGI application in-process (Channels'
HttpCommunicator, which names no server: the requests carry a Host header); the other
routes through Django's test client."""
import json

import pytest
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator

from gateway.asgi import application
from responses_app.auth import mint_api_key
from responses_app.models import StoredResponse, Tenant

pytestmark = pytest.mark.django_db(transaction=True)


class AsgiResponse:
    """The parts of a response the assertions read, from an ASGI exchange."""

    def __init__(self, raw):
        self.status_code = raw["status"]
        self.headers = {k.decode().lower(): v.decode() for k, v in raw["headers"]}
        self.content = raw["body"]

    def __getitem__(self, name):
        return self.headers[name.lower()]

    def json(self):
        return json.loads(self.content)


@pytest.fixture
def key():
    return mint_api_key(Tenant.objects.create(name="alice"))


def post(client, body, key=None, raw=None, **headers):
    """POST /v1/responses through the ASGI application (HTTP_AUTHORIZATION=... for a header)."""
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    data = raw.encode() if raw is not None else json.dumps(body).encode()
    header_list = [(b"host", b"localhost"), (b"content-type", b"application/json"),
                   (b"content-length", str(len(data)).encode())]
    if "HTTP_AUTHORIZATION" in headers:
        header_list.append((b"authorization", headers["HTTP_AUTHORIZATION"].encode()))
    communicator = HttpCommunicator(application, "POST", "/v1/responses", body=data,
                                    headers=header_list)
    return AsgiResponse(async_to_sync(communicator.get_response)(timeout=10))


def assert_error(response, status, code, param=None):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code
    assert body["error"]["param"] == param
    assert body["error"]["message"]
    assert StoredResponse.objects.count() == 0


def test_missing_key_is_401(client):
    assert_error(post(client, {"model": "m", "input": "hi"}), 401, "invalid_api_key")


@pytest.mark.parametrize("header", ["Bearer sk-nope_nope", "Bearer nothing", "Basic abc",
                                    "Bearer sk-abc"])
def test_wrong_key_is_401(client, key, header):
    response = post(client, {"model": "m", "input": "hi"}, HTTP_AUTHORIZATION=header)
    assert_error(response, 401, "invalid_api_key")


def test_right_prefix_wrong_secret_is_401(client, key):
    prefix = key.split("_", 1)[0]
    assert_error(post(client, {}, key=f"{prefix}_wrongsecret"), 401, "invalid_api_key")


def test_revoked_key_is_401(client, key):
    from django.utils import timezone
    from responses_app.models import ApiKey

    ApiKey.objects.update(revoked_at=timezone.now())
    assert_error(post(client, {"model": "m", "input": "hi"}, key=key), 401, "invalid_api_key")


def test_bad_json_is_400(client, key):
    assert_error(post(client, None, key=key, raw="{not json"), 400, "invalid_json")


@pytest.mark.parametrize("body, param, code", [
    ({"input": "hi"}, "model", "missing_required_parameter"),
    ({"model": "m"}, "input", "missing_required_parameter"),
    ({"model": 3, "input": "hi"}, "model", "invalid_type"),
    ({"model": "m", "input": 3}, "input", "invalid_type"),
    ({"model": "m", "input": [{"type": "banana"}]}, "input[0].type", "invalid_value"),
    ({"model": "m", "input": "hi", "temperature": "hot"}, "temperature", "invalid_type"),
    ({"model": "m", "input": "hi", "stream": "yes"}, "stream", "invalid_type"),
    ({"model": "m", "input": "hi", "max_output_tokens": 0}, "max_output_tokens", "invalid_value"),
])
def test_invalid_body_is_400(client, key, body, param, code):
    assert_error(post(client, body, key=key), 400, code, param)


def test_body_list_is_400(client, key):
    assert_error(post(client, [1, 2], key=key), 400, None)


def test_body_over_the_limit_is_413(client, key, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = post(client, {"model": "m", "input": "x" * 2000}, key=key)
    assert_error(response, 413, "request_too_large")


def test_unknown_previous_response_is_400(client, key):
    response = post(client, {"model": "m", "input": "hi", "previous_response_id": "resp_nope"},
                    key=key)
    assert_error(response, 400, "previous_response_not_found", "previous_response_id")


@pytest.mark.parametrize("method, path, status, code", [
    ("get", "/v1/nothing-here", 404, "unknown_route"),
    ("post", "/v1/completions", 404, "unknown_route"),
    ("get", "/v1/chat/completions/chatcmpl-missing", 404, "not_found"),
    ("get", "/v1/chat/completions/chatcmpl-missing/messages", 404, "not_found"),
    ("put", "/v1/chat/completions", 405, "method_not_allowed"),
    ("post", "/v1/responses/compact", 415, "unsupported_media_type"),  # a form: JSON only
    ("post", "/v1/responses/input_tokens", 415, "unsupported_media_type"),
    ("get", "/v1/responses/resp_missing", 404, "not_found"),
    ("delete", "/v1/responses/resp_missing", 404, "not_found"),
    ("get", "/v1/responses/resp_missing/input_items", 404, "not_found"),
    ("get", "/v1/responses", 405, "method_not_allowed"),
    ("put", "/v1/responses/resp_missing", 405, "method_not_allowed"),
    ("post", "/v1/responses/resp_missing/cancel", 404, "not_found"),
    ("patch", "/v1/nothing-here", 404, "unknown_route"),
])
def test_routes_answer_json_errors(key, method, path, status, code):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)  # as a real server does: no CSRF page under /v1
    response = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_error(response, status, code)


def test_unauthenticated_detail_is_401_not_404(client):
    assert_error(client.get("/v1/responses/resp_x"), 401, "invalid_api_key")


def test_a_websocket_without_a_key_gets_an_error_frame_and_4401():
    """WebSocket mode (/v1/responses): the handshake is accepted, the missing key answered
    with OpenAI's error frame, then the socket closed (4401)."""
    from channels.testing import WebsocketCommunicator

    async def handshake():
        communicator = WebsocketCommunicator(application, "/v1/responses")
        connected, _ = await communicator.connect(timeout=5)
        return (connected, await communicator.receive_json_from(timeout=5),
                await communicator.receive_output(timeout=5))

    connected, frame, closed = async_to_sync(handshake)()
    assert connected
    assert frame == {"type": "error", "status": 401, "error": {
        "type": "invalid_request_error", "code": "invalid_api_key", "param": None,
        "message": "You didn't provide an API key. Send it as 'Authorization: Bearer sk-...'."}}
    assert closed == {"type": "websocket.close", "code": 4401}


def test_a_websocket_handshake_elsewhere_is_refused_cleanly():
    from channels.testing import WebsocketCommunicator

    communicator = WebsocketCommunicator(application, "/v1/models")
    connected, code = async_to_sync(communicator.connect)(timeout=5)
    assert (connected, code) == (False, 1000)


def test_a_bad_host_header_is_a_json_400(key):
    from django.test import Client

    response = Client(HTTP_HOST="evil.example").get(
        "/v1/models", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_error(response, 400, "bad_request")


def test_a_bad_host_header_is_a_json_400_on_the_streaming_views_too(key):
    data = json.dumps({"model": "m", "input": "hi"}).encode()
    communicator = HttpCommunicator(application, "POST", "/v1/responses", body=data, headers=[
        (b"host", b"evil.example"), (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {key}".encode())])
    assert_error(AsgiResponse(async_to_sync(communicator.get_response)(timeout=10)), 400,
                 "bad_request")


def test_an_unknown_parameter_is_openais_400(client, key):
    response = post(client, {"model": "m", "input": "hi", "seed": 1}, key=key)
    assert_error(response, 400, "unknown_parameter", "seed")
    assert response.json()["error"]["message"] == "Unknown parameter: 'seed'."


def test_a_wrong_type_is_openais_400(client, key):
    response = post(client, {"model": 7, "input": "hi"}, key=key)
    assert_error(response, 400, "invalid_type", "model")
    assert response.json()["error"]["message"] == (
        "Invalid type for 'model': expected a string, but got an integer instead.")


# --- found by a probe of odd input (each was a 500, or an HTML page) ------------------------

def error_body(message: str, param, code: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": code}}


@pytest.mark.parametrize("path", ["/v1/files?after=%00", "/v1/files?purpose=a%00b",
                                  "/v1/vector_stores?before=%00",
                                  "/v1/chat/completions?model=%00",
                                  "/v1/chat/completions?metadata%5Ba%5D=%00"])
def test_a_nul_in_a_query_parameter_is_a_400(key, path):
    from django.test import Client

    response = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400
    name = path.split("?")[1].split("=")[0].replace("%5B", "[").replace("%5D", "]")
    assert response.json() == error_body(
        "Strings in the request may not contain the NUL character (\\u0000).", name,
        "invalid_value")


LONG_MODEL = "m" * 201
TOO_LONG = error_body("Invalid 'model': string too long. Expected a string with maximum "
                      "length 200, but got a string with length 201 instead.", "model",
                      "string_above_max_length")


@pytest.mark.parametrize("path, body", [
    ("/v1/responses", {"model": LONG_MODEL, "input": "hi"}),
    ("/v1/chat/completions", {"model": LONG_MODEL, "messages": [{"role": "user",
                                                                 "content": "hi"}]}),
    ("/v1/embeddings", {"model": LONG_MODEL, "input": "hi"}),
])
def test_a_model_name_longer_than_its_columns_is_a_400(client, key, path, body):
    if path == "/v1/responses":  # the streaming view, through the ASGI application
        response = post(client, body, key=key)
    else:
        response = client.post(path, body, content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {key}")
    assert (response.status_code, response.json()) == (400, TOO_LONG)
    assert StoredResponse.objects.count() == 0


@pytest.mark.parametrize("role", [[], {"a": 1}, ["user"]])
def test_a_chat_message_role_that_is_not_a_string_is_a_400(client, key, role):
    response = client.post("/v1/chat/completions", {"model": "m", "messages": [
        {"role": role, "content": "hi"}]}, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400
    assert response.json() == error_body(
        "Invalid value for 'messages[0].role': expected one of assistant, developer, "
        "function, system, tool, user.", "messages[0].role", "invalid_value")


def test_v1_itself_is_a_json_404(client, key):
    response = client.get("/v1", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 404
    assert response.json() == error_body("Unknown route: GET /v1.", None, "unknown_route")


def test_a_chat_metadata_filter_takes_its_key_as_it_is(client, key):
    from django.utils import timezone

    from chat_completions.models import StoredChatCompletion

    StoredChatCompletion.objects.create(
        id="chatcmpl-kept", tenant=Tenant.objects.get(name="alice"), model="m",
        created_at=timezone.now(), metadata={"a__regex": "(", "topic": "t"},
        completion={"id": "chatcmpl-kept", "object": "chat.completion"})
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    found = client.get("/v1/chat/completions?metadata%5Ba__regex%5D=(&metadata%5Btopic%5D=t",
                       **auth)
    assert (found.status_code, [c["id"] for c in found.json()["data"]]) == (
        200, ["chatcmpl-kept"])
    for lookup in ("topic__isnull%5D=true", "topic__regex%5D=(", "topic__gt%5D=a"):
        response = client.get(f"/v1/chat/completions?metadata%5B{lookup}", **auth)
        assert (response.status_code, response.json()["data"]) == (200, [])


def test_usage_ending_in_the_first_days_of_the_calendar_is_a_400(client, key):
    response = client.get("/v1/usage?end=0001-01-01", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400
    assert response.json() == error_body("'start' must be before 'end'.", "start",
                                         "invalid_value")
