"""The /v1/chat/completions routes. Thin: the tenant from the API key (DRF's
authentication, as /v1/responses), a selector, a JSON answer. `POST /v1/chat/completions`
is the async view front.create_chat_completion, one StreamingRoute (served by the ASGI
front that skips the middleware chain, as `POST /v1/responses`).

Not in /v1/openapi.json yet (left out of it: the document describes the Responses API, each
operation by hand in api_schema.operations); OpenAI's own reference describes these."""
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from responses_app.api.stream_views import StreamingRoute
from responses_app.errors import APIError

from . import selectors
from .front import create_chat_completion

NOT_IN_DOCUMENT = extend_schema(exclude=True)


@NOT_IN_DOCUMENT
class ChatCompletionCollection(APIView):
    def get(self, request):
        return Response(selectors.completion_list(request.user.tenant, request.query_params))

    def post(self, request):  # never called: the async view takes POST
        raise APIError("POST /v1/chat/completions is served by its async view.", status=405,
                       code="method_not_allowed")


@NOT_IN_DOCUMENT
class ChatCompletionDetail(APIView):
    def get(self, request, completion_id):
        return Response(selectors.completion_row(request.user.tenant, completion_id).as_object())

    def post(self, request, completion_id):
        return Response(selectors.completion_update(request.user.tenant, completion_id,
                                                    request.data))

    def delete(self, request, completion_id):
        return Response(selectors.completion_delete(request.user.tenant, completion_id))


@NOT_IN_DOCUMENT
class ChatCompletionMessages(APIView):
    def get(self, request, completion_id):
        return Response(selectors.completion_messages(request.user.tenant, completion_id,
                                                      request.query_params))


CREATE = StreamingRoute(ChatCompletionCollection, "POST", create_chat_completion)
chat_completion_collection = CREATE.django_view
