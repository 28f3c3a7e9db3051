"""What each /v1 operation takes and answers, for the OpenAPI document.

DOCUMENTED_VIEWS maps a view's import path to its methods' extend_schema arguments, applied by
api_schema.extensions without touching the views; a view that does not exist (yet) is
skipped. To document a new endpoint: describe it here, and link it from LINKS if it acts
on an id another operation returns.
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from .components import ref
from .store_operations import STORE_LINKS, STORE_OPERATIONS

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
CONVERSATION_ID = OpenApiParameter("conversation_id", OpenApiTypes.STR, OpenApiParameter.PATH,
                                   description="A conversation id (`conv_…`).")
ITEM_ID = OpenApiParameter("item_id", OpenApiTypes.STR, OpenApiParameter.PATH)
PAGING = [
    OpenApiParameter("after", OpenApiTypes.STR, description="An item id to list after."),
    OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
    OpenApiParameter("order", str, enum=["asc", "desc"], default="desc"),
]
STREAM_OF_EVENTS = OpenApiResponse(
    ref("ServerSentEvent"),
    description="With `stream: true`: the event stream (the schema describes each event).")

create_response = dict(
    operation_id="createResponse",
    summary="Create a response",
    description="Runs the model (routed by name) and answers with the response object, or, "
                "with `stream: true`, the Responses event stream as server-sent events ending "
                "in `data: [DONE]`. Served by an async view (responses_app.api.stream_views).",
    request={"application/json": ref("CreateResponseRequest")},
    responses={
        (200, "application/json"): OpenApiResponse(ref("Response"), description="The response."),
        (200, "text/event-stream"): STREAM_OF_EVENTS,
        **errors(400, 404, 413, 502, 503, 504),
    },
)

retrieve_response = dict(
    operation_id="getResponse", summary="Retrieve a stored response",
    description="With `stream=true`, its events from the start (or after `starting_after`), "
                "then the live tail while it runs.",
    parameters=[
        RESPONSE_ID,
        OpenApiParameter("stream", OpenApiTypes.BOOL, description="Replay the event stream."),
        OpenApiParameter("starting_after", {"type": "integer", "minimum": 0},
                         description="With `stream=true`: the sequence number to resume after."),
    ],
    responses={(200, "application/json"): OpenApiResponse(ref("Response")),
               (200, "text/event-stream"): STREAM_OF_EVENTS,
               **errors(400, 404, 503)},
)

cancel_response = dict(
    operation_id="cancelResponse", summary="Cancel a background response",
    description="Idempotent: a finished response is returned unchanged.",
    parameters=[RESPONSE_ID],
    request=None,
    responses={200: OpenApiResponse(ref("Response")), **errors(400, 404)},
)

count_input_tokens = dict(
    operation_id="countInputTokens", summary="Count the input tokens of a create body",
    description="Counted on the chat request the response's run would send, with the "
                "upstream route's counter (header `X-Token-Count-Method`).",
    request={"application/json": ref("InputTokensRequest")},
    responses={200: OpenApiResponse(ref("InputTokens")), **errors(400, 404, 502)},
)

compact_response = dict(
    operation_id="compactResponse", summary="Compact a conversation",
    description="The route's model summarizes the conversation (`input`, the chain of "
                "`previous_response_id`, or both); the answer keeps the newest user "
                "messages and one compaction item sealing the summary.",
    request={"application/json": ref("CompactResponseRequest")},
    responses={200: OpenApiResponse(ref("CompactedResponse")), **errors(400, 404, 502)},
)

delete_response = dict(
    operation_id="deleteResponse", summary="Delete a stored response",
    parameters=[RESPONSE_ID],
    responses={200: OpenApiResponse(ref("DeletedResponse")), **errors(404)},
)

list_input_items = dict(
    operation_id="listInputItems", summary="A response's own input items, paginated",
    parameters=[RESPONSE_ID, *PAGING],
    responses={200: OpenApiResponse(ref("ItemList")), **errors(400, 404)},
)

list_models = dict(
    operation_id="listModels", summary="The models this gateway routes",
    responses={200: OpenApiResponse(ref("ModelList")), **errors(502)},
)

usage = dict(
    operation_id="getUsage", summary="This tenant's token usage per day and model",
    parameters=[
        OpenApiParameter("start", OpenApiTypes.DATE,
                         description="First day (UTC, inclusive); default: 7 days before end."),
        OpenApiParameter("end", OpenApiTypes.DATE,
                         description="Day after the last (exclusive); default: tomorrow."),
    ],
    responses={200: OpenApiResponse(ref("UsagePage")), **errors(400)},
)

create_conversation = dict(
    operation_id="createConversation", summary="Create a conversation",
    request={"application/json": ref("CreateConversationRequest")},
    responses={200: OpenApiResponse(ref("Conversation")), **errors(400)},
)
retrieve_conversation = dict(
    operation_id="getConversation", summary="Retrieve a conversation",
    parameters=[CONVERSATION_ID],
    responses={200: OpenApiResponse(ref("Conversation")), **errors(404)},
)
update_conversation = dict(
    operation_id="updateConversation", summary="Replace a conversation's metadata",
    parameters=[CONVERSATION_ID],
    request={"application/json": ref("UpdateConversationRequest")},
    responses={200: OpenApiResponse(ref("Conversation")), **errors(400, 404)},
)
delete_conversation = dict(
    operation_id="deleteConversation", summary="Delete a conversation and its items",
    parameters=[CONVERSATION_ID],
    responses={200: OpenApiResponse(ref("ConversationDeleted")), **errors(404)},
)
list_conversation_items = dict(
    operation_id="listConversationItems", summary="A conversation's items, paginated",
    parameters=[CONVERSATION_ID, *PAGING],
    responses={200: OpenApiResponse(ref("ItemList")), **errors(400, 404)},
)
add_conversation_items = dict(
    operation_id="addConversationItems", summary="Append up to 20 items",
    parameters=[CONVERSATION_ID],
    request={"application/json": ref("AddConversationItemsRequest")},
    responses={200: OpenApiResponse(ref("ItemList")), **errors(400, 404)},
)
retrieve_conversation_item = dict(
    operation_id="getConversationItem", summary="Retrieve one item of a conversation",
    parameters=[CONVERSATION_ID, ITEM_ID],
    responses={200: OpenApiResponse(ref("Item")), **errors(404)},
)
delete_conversation_item = dict(
    operation_id="deleteConversationItem", summary="Remove one item; returns the conversation",
    parameters=[CONVERSATION_ID, ITEM_ID],
    responses={200: OpenApiResponse(ref("Conversation")), **errors(404)},
)


def _links(parameter: str, **operations: str) -> dict:
    return {name: {"operationId": operation_id,
                   "parameters": {parameter: "$response.body#/id"}}
            for name, operation_id in operations.items()}


# How a created response's id feeds the other operations (OpenAPI links; schemathesis
# follows them in its stateful test): (path, method, status) -> links.
LINKS = {
    ("/v1/responses", "post", "200"): _links(
        "response_id", GetResponse="getResponse", DeleteResponse="deleteResponse",
        ListInputItems="listInputItems", CancelResponse="cancelResponse"),
    ("/v1/conversations", "post", "200"): _links(
        "conversation_id", GetConversation="getConversation",
        UpdateConversation="updateConversation", DeleteConversation="deleteConversation",
        ListConversationItems="listConversationItems",
        AddConversationItems="addConversationItems"),
    **STORE_LINKS,
}

# view import path -> {method: extend_schema(**arguments)}
DOCUMENTED_VIEWS = {
    "responses_app.api.views.ResponseCollection": {"post": create_response},
    "responses_app.api.views.ResponseDetail": {"get": retrieve_response, "delete": delete_response},
    "responses_app.api.views.ResponseInputItems": {"get": list_input_items},
    "responses_app.api.views.ModelList": {"get": list_models},
    "accounting.views.UsageView": {"get": usage},
    "responses_app.api.views.ResponseCancel": {"post": cancel_response},
    "responses_app.api.views.ResponseInputTokens": {"post": count_input_tokens},
    "responses_app.api.views.ResponseCompact": {"post": compact_response},
    "conversations.views.ConversationCreate": {"post": create_conversation},
    "conversations.views.ConversationDetail": {
        "get": retrieve_conversation, "post": update_conversation,
        "delete": delete_conversation},
    "conversations.views.ConversationItems": {
        "get": list_conversation_items, "post": add_conversation_items},
    "conversations.views.ConversationItemDetail": {
        "get": retrieve_conversation_item, "delete": delete_conversation_item},
    **STORE_OPERATIONS,
}
