"""The streaming endpoints as async Django views: `POST /v1/responses` and
`GET /v1/responses/{id}?stream=true` (resume).

They run on the event loop from start to end (a stream never holds a database thread):
streaming.py admits, validates and creates or follows the response, and relay.py turns
its events into the answer. Daphne serves them through the ASGI front (asgi_front.py),
Django's test client through the middleware; both check the Host, count and log the
request and render errors with the same code. Every other method of these routes is the
DRF view's, which also carries the route's OpenAPI description.
"""
import asyncio
from functools import partial, wraps

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from . import relay, streaming, views
from ..errors import BodyTooLarge

CLIENT_CLOSED = 499  # nginx's "client closed request", counted when a client leaves


def _with_drf_view(drf_view_class, streaming_handler):
    """A route's view: `streaming_handler(method, query)` picks the async view of a
    request, or None for the DRF view (the route's other methods; the OpenAPI document
    reads its `cls`). The ASGI front (asgi_front.py) asks the same question."""
    drf_view = drf_view_class.as_view()
    drf_view_async = sync_to_async(drf_view)

    @wraps(drf_view)
    async def view(request, *args, **kwargs):
        handler = streaming_handler(request.method, request.GET)
        if handler is None:
            return await drf_view_async(request, *args, **kwargs)
        return await handler(request, *args, **kwargs)

    view.streaming_handler = streaming_handler
    return csrf_exempt(view)


async def create_response(request):
    exchange = request.exchange
    body = _body(request)
    row, create, subscription = await streaming.create(
        request.headers.get("Authorization"), body, exchange)
    # a store=false run whose client leaves: nobody can ever read the rest, so stop it
    abandoned = None if create.store else partial(streaming.cancel_abandoned, row.id)
    if create.background:
        if not create.stream:
            return _django(relay.json_reply(200, row.resource))
        reply = relay.resume_reply(subscription, abandoned)
    elif create.stream:
        reply = await relay.stream_reply(subscription, abandoned)
    else:
        try:
            reply = await relay.final_reply(subscription)
        except asyncio.CancelledError:  # the client left while the run went on
            if abandoned is not None:
                await abandoned()
            exchange.answered(request.resolver_match.route, request.path, CLIENT_CLOSED)
            raise
    return _django(reply)


async def resume_response(request, response_id: str):
    after = streaming.starting_after(_last(request.GET, "starting_after"))
    subscription = await streaming.follow(request.headers.get("Authorization"), response_id,
                                          after, request.exchange)
    return _django(relay.resume_reply(subscription))


def _body(request) -> bytes:
    """The request body; Django refuses a larger declared Content-Length, this any other."""
    body = request.body
    if len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise BodyTooLarge("The request body is larger than this server accepts.")
    return body


def _last(query, name: str) -> str | None:
    """The last non-blank value of a query parameter."""
    values = [value for value in query.getlist(name) if value]
    return values[-1] if values else None


def _django(reply: relay.Reply):
    """A relay Reply as a Django response."""
    if reply.stream is None:
        response = HttpResponse(reply.body, status=reply.status)
    else:
        response = StreamingHttpResponse(reply.stream, status=reply.status)
    for name, value in reply.headers:
        response[name.decode("latin-1")] = value.decode("latin-1")
    return response


def _create_handler(method: str, query):
    return create_response if method == "POST" else None


def _resume_handler(method: str, query):
    if method == "GET" and (_last(query, "stream") or "").lower() == "true":
        return resume_response
    return None


response_collection = _with_drf_view(views.ResponseCollection, _create_handler)
response_detail = _with_drf_view(views.ResponseDetail, _resume_handler)
