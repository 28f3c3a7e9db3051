"""The /v1 endpoints. Thin: authenticate, validate, call a service or selector, render.

`POST /v1/responses` and `GET /v1/responses/{id}?stream=true` are async views
(stream_views.py); the rest are DRF views.
"""
from django.core.exceptions import SuspiciousOperation
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found as django_page_not_found
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import models_catalog, selectors, services
from ..context import services as context_services
from ..errors import APIError, NotFound, ServerError, error_response, render_exception
from ..paging import page_params

# How input_tokens counted (upstreams.token_counting: vllm, llamacpp, tokenizer, estimate).
TOKEN_COUNT_HEADER = "X-Token-Count-Method"


class ResponseCollection(APIView):
    """POST is the async view stream_views.create_response; this view carries its OpenAPI
    description (api_schema) and answers other methods with a 405."""

    def post(self, request):  # the OpenAPI description only: stream_views.CREATE serves POST
        raise APIError("POST /v1/responses is served by stream_views.create_response.",
                       status=405, code="method_not_allowed")


class ResponseDetail(APIView):
    def get(self, request, response_id):
        return Response(selectors.response_get(request.user.tenant, response_id))

    def delete(self, request, response_id):
        services.response_delete(request.user.tenant, response_id)
        return Response({"id": response_id, "object": "response", "deleted": True})


class ResponseCancel(APIView):
    def post(self, request, response_id):
        return Response(services.response_cancel(request.user.tenant, response_id))


class ResponseInputItems(APIView):
    def get(self, request, response_id):
        page = page_params(request.query_params)
        return Response(selectors.input_items_page(
            request.user.tenant, response_id, after=page.after, limit=page.limit,
            order=page.order))


class ResponseInputTokens(APIView):
    def post(self, request):
        counted = context_services.response_input_tokens(request.user.tenant, request.data)
        return Response({"object": "response.input_tokens", "input_tokens": counted.tokens},
                        headers={TOKEN_COUNT_HEADER: counted.method})


class ResponseCompact(APIView):
    def post(self, request):
        return Response(context_services.response_compact(request.user.tenant, request.data))


class ModelList(APIView):
    def get(self, request):
        return Response({"object": "list", "data": models_catalog.list_models()})


@csrf_exempt  # an API route: no CSRF page for an unknown POST/DELETE, a JSON 404
def not_found(request, *args, **kwargs):
    raise NotFound(f"Unknown route: {request.method} {request.path}.", code="unknown_route")


def page_not_found(request, exception=None):
    """handler404: for `/v1` itself the JSON 404 of an unknown route (everything under
    /v1/ reaches the catch-all, not_found), Django's page elsewhere."""
    if request.path != "/v1":
        return django_page_not_found(request, exception)
    return error_response(NotFound(f"Unknown route: {request.method} {request.path}.",
                                   code="unknown_route"))


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: under /v1 (bearer keys, no cookies) an API error, never a page."""
    if not request.path.startswith("/v1/"):
        from django.views.csrf import csrf_failure as django_csrf_failure

        return django_csrf_failure(request, reason)
    return error_response(APIError(f"Forbidden: {reason}", status=403, code="forbidden"))


def bad_request(request, exception=None):
    """handler400: a bad Host header and other early 400s, JSON under /v1."""
    if not request.path.startswith("/v1/"):
        from django.views.defaults import bad_request as django_bad_request

        return django_bad_request(request, exception)
    if not isinstance(exception, SuspiciousOperation):
        exception = SuspiciousOperation()  # any other early 400 answers as a bad Host does
    return render_exception(exception, request)


def server_error(request):
    """handler500: an error outside the views (a middleware), JSON under /v1."""
    if not request.path.startswith("/v1/"):
        from django.views.defaults import server_error as django_server_error

        return django_server_error(request)
    return error_response(ServerError("The server had an error while processing your request."))
