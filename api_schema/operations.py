"""What each /v1 operation takes and answers, for the OpenAPI document.

One `document(...)` entry per view, applied by api_schema.extensions without touching the
views. To document a new endpoint: add its view here (import path → methods → extend_schema).
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from .components import ref

ERROR_MEANINGS = {
    400: "Invalid request (`invalid_request_error`), or the upstream refused it.",
    401: "Missing or invalid API key (`invalid_api_key`).",
    404: "No such response for this tenant (another tenant's ids are not revealed), or the "
         "upstream does not know the model.",
    413: "The request body is larger than MAX_REQUEST_BODY_BYTES.",
    429: "Rate limited (`rate_limit_exceeded`, with Retry-After), by the gateway or upstream.",
    500: "The server had an error (`server_error`).",
    502: "The upstream failed before the stream started, or a non-streamed run failed.",
    503: "No worker started the run in time, the event bus is unavailable, or the upstream "
         "is at its concurrency limit (with Retry-After).",
    504: "The upstream did not answer in time.",
}
COMMON_ERRORS = (401, 429, 500)


def errors(*statuses: int) -> dict:
    return {status: OpenApiResponse(ref("Error"), description=ERROR_MEANINGS[status])
            for status in sorted({*statuses, *COMMON_ERRORS})}


RESPONSE_ID = OpenApiParameter("response_id", OpenApiTypes.STR, OpenApiParameter.PATH,
                               description="A response id (`resp_…`).")

create_response = extend_schema(
    operation_id="createResponse",
    summary="Create a response",
    description="Runs the model (routed by name) and answers with the response object, or, "
                "with `stream: true`, the Responses event stream as server-sent events ending "
                "in `data: [DONE]`. Served by the ASGI front (responses_app.asgi_front).",
    request={"application/json": ref("CreateResponseRequest")},
    responses={
        (200, "application/json"): OpenApiResponse(ref("Response"), description="The response."),
        (200, "text/event-stream"): OpenApiResponse(
            ref("ServerSentEvent"), description="With `stream: true`: the event stream (the "
                                                "schema describes each event)."),
        **errors(400, 404, 413, 502, 503, 504),
    },
)

retrieve_response = extend_schema(
    operation_id="getResponse", summary="Retrieve a stored response",
    parameters=[RESPONSE_ID],
    responses={200: OpenApiResponse(ref("Response")), **errors(404)},
)

delete_response = extend_schema(
    operation_id="deleteResponse", summary="Delete a stored response",
    parameters=[RESPONSE_ID],
    responses={200: OpenApiResponse(ref("DeletedResponse")), **errors(404)},
)

list_input_items = extend_schema(
    operation_id="listInputItems", summary="A response's own input items, paginated",
    parameters=[
        RESPONSE_ID,
        OpenApiParameter("after", OpenApiTypes.STR, description="An item id to list after."),
        OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 100,
                                   "default": 20}),
        OpenApiParameter("order", str, enum=["asc", "desc"], default="desc"),
    ],
    responses={200: OpenApiResponse(ref("ItemList")), **errors(400, 404)},
)

list_models = extend_schema(
    operation_id="listModels", summary="The models this gateway routes",
    responses={200: OpenApiResponse(ref("ModelList")), **errors(502)},
)

# How a created response's id feeds the other operations (OpenAPI links; schemathesis
# follows them in its stateful test): (path, method, status) -> links.
LINKS = {
    ("/v1/responses", "post", "200"): {
        name: {"operationId": operation_id, "parameters": {"response_id": "$response.body#/id"}}
        for name, operation_id in [("GetResponse", "getResponse"),
                                   ("DeleteResponse", "deleteResponse"),
                                   ("ListInputItems", "listInputItems")]
    },
}

# view import path -> {method: extend_schema(...)}
DOCUMENTED_VIEWS = {
    "responses_app.views.ResponseCollection": {"post": create_response},
    "responses_app.views.ResponseDetail": {"get": retrieve_response, "delete": delete_response},
    "responses_app.views.ResponseInputItems": {"get": list_input_items},
    "responses_app.views.ModelList": {"get": list_models},
}
