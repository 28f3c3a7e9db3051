"""The /v1 endpoints. Thin: authenticate, validate, call a service or selector, render.

`POST /v1/responses` is an async view because it may stream; the rest are DRF views.
"""
import orjson
from asgiref.sync import sync_to_async
from django.views.decorators.csrf import csrf_exempt
from rest_framework.response import Response
from rest_framework.views import APIView

from . import models_catalog, relay, selectors, services
from .auth import resolve_api_key
from .create_request import parse_create_request
from .errors import APIError, InvalidRequest, NotFound


@csrf_exempt
async def create_response(request):
    if request.method != "POST":
        raise APIError(f"Method {request.method} is not allowed here.", status=405,
                       code="method_not_allowed")
    row, stream = await sync_to_async(_create)(request)
    if stream:
        return await relay.stream_events(row.id)
    return await relay.final_response(row.id)


def _create(request):
    principal = resolve_api_key(request.headers.get("authorization"))
    create = parse_create_request(_json_body(request))
    return services.response_create(principal.tenant, create), create.stream


def _json_body(request):
    try:
        return orjson.loads(request.body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"We could not parse the JSON body of your request: {exc}.",
                             code="invalid_json") from None


class ResponseDetail(APIView):
    def get(self, request, response_id):
        return Response(selectors.response_get(request.user.tenant, response_id).resource)

    def delete(self, request, response_id):
        services.response_delete(request.user.tenant, response_id)
        return Response({"id": response_id, "object": "response", "deleted": True})


class ResponseInputItems(APIView):
    def get(self, request, response_id):
        query = request.query_params
        order = query.get("order", "desc")
        if order not in ("asc", "desc"):
            raise InvalidRequest("'order' must be 'asc' or 'desc'.", param="order",
                                 code="invalid_value")
        try:
            limit = int(query.get("limit", 20))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            raise InvalidRequest("'limit' must be an integer from 1 to 100.", param="limit",
                                 code="invalid_value")
        return Response(selectors.input_items_page(
            request.user.tenant, response_id, after=query.get("after"), limit=limit, order=order))


class ModelList(APIView):
    def get(self, request):
        return Response({"object": "list", "data": models_catalog.list_models()})


def not_found(request, *args, **kwargs):
    raise NotFound(f"Unknown route: {request.method} {request.path}.", code="unknown_route")



