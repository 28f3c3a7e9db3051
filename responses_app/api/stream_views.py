"""The streaming endpoints as async Django views: `POST /v1/responses` and
`GET /v1/responses/{id}?stream=true` (resume).

They run on the event loop from start to end (a stream never holds a database thread):
streaming.py admits, validates and creates or follows the response, and relay.py turns
its events into the answer. Each is one StreamingRoute, named here: the URL (urls.py),
the method and query it serves, its async view, and the DRF view that serves every other
request of the URL and carries its OpenAPI description (drf-spectacular documents a DRF
view's methods: ResponseCollection.post is that description, never called). Daphne
serves them through the ASGI front (asgi_front.py), which asks the route once it has
resolved the URL; Django's test client through the middleware. Both check the Host,
count and log the request and render errors with the same code.
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


async def create_response(request):
    exchange = request.exchange
    body = request_body(request)
    row, create, subscription = await streaming.create(
        request.headers.get("Authorization"), body, exchange)
    # a store=false run whose client leaves: nobody can ever read the rest, so stop it
    abandoned = None if create.store else partial(streaming.cancel_abandoned, row.id)
    if create.background:
        if not create.stream:
            return django_response(relay.json_reply(200, row.resource))
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
    return django_response(reply)


async def resume_response(request, response_id: str):
    after = streaming.starting_after(_last(request.GET, "starting_after"))
    subscription = await streaming.follow(request.headers.get("Authorization"), response_id,
                                          after, request.exchange)
    return django_response(relay.resume_reply(subscription, starting_after=after))


def request_body(request) -> bytes:
    """The request body; Django refuses a larger declared Content-Length, this any other."""
    body = request.body
    if len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise BodyTooLarge("The request body is larger than this server accepts.")
    return body


def _last(query, name: str) -> str | None:
    """The last non-blank value of a query parameter."""
    values = [value for value in query.getlist(name) if value]
    return values[-1] if values else None


def django_response(reply: relay.Reply):
    """A relay Reply as a Django response."""
    if reply.stream is None:
        response = HttpResponse(reply.body, status=reply.status)
    else:
        response = StreamingHttpResponse(reply.stream, status=reply.status)
        response.relay_reply = reply  # the ASGI front may write its events through
    for name, value in reply.headers:
        response[name.decode("latin-1")] = value.decode("latin-1")
    return response


class StreamingRoute:
    """One URL whose `method` requests (those whose query `wants`, when given) the async
    `view` serves, and every other request its DRF view. `django_view` is what the URLconf
    routes to (the OpenAPI document reads its `cls`, the DRF view's)."""

    def __init__(self, drf_view_class, method: str, view, wants=None):
        self.method, self.view, self.wants = method, view, wants
        drf_view = drf_view_class.as_view()
        drf_view_async = sync_to_async(drf_view)

        @wraps(drf_view)
        async def django_view(request, *args, **kwargs):
            if self.serves(request.method, request.GET):
                return await view(request, *args, **kwargs)
            return await drf_view_async(request, *args, **kwargs)

        django_view.streaming_route = self
        self.django_view = csrf_exempt(django_view)

    def serves(self, method: str, query) -> bool:
        """Whether the async view serves a request of `method` with `query`."""
        return method == self.method and (self.wants is None or self.wants(query))


def _wants_stream(query) -> bool:
    return (_last(query, "stream") or "").lower() == "true"


CREATE = StreamingRoute(views.ResponseCollection, "POST", create_response)
RESUME = StreamingRoute(views.ResponseDetail, "GET", resume_response, wants=_wants_stream)
STREAMING_METHODS = frozenset(route.method for route in (CREATE, RESUME))
