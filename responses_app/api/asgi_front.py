"""The streaming views served without Django's middleware chain: an ASGI app in front of
Django's ASGI handler (django.core.handlers.asgi.ASGIHandler, which it replaces for these
requests only).

The library's way is Django's handler: it is what serves these views when this front is
not installed (tests through Django's client) and every other request. Its cost on this
path is the middleware chain (each MiddlewareMixin hook a hop to a thread; every
request, a stream too, gets a thread of its own) and the request signals: web CPU 2.5 vs
5.6 ms per response, all-in +42% without it, at c=100, 5 ms (paired runs, 2026-11-25,
2f9616d; docs/architecture.md's ledger says when Django's handler comes back).

Everything else is the library's or shared with Django's route, once: Django resolves the
URL, reads the body and builds the request (ASGIHandler.read_body, ASGIRequest), checks
the Host (HttpRequest.get_host) and sends the response (ASGIHandler.send_response); the
views are stream_views'; the request id, metrics and access log are
observability.http's exchange; errors render through errors.render_exception, as
ApiErrorMiddleware does.

Under Daphne, an SSE stream's events are also written through (relay.write_through,
daphne_write.py): the bus reader's pass writes each waiting stream's new events to its
connection at once, where each would wake the stream's task and pass through Django's
send_response, an async generator per layer and Daphne's send coroutine, to end in the
same synchronous write. Measured: docs/architecture.md's ledger ("SSE write-through").
Under another server, whose `send` is not known to be synchronous, streams take the ASGI
path alone.
"""
import asyncio

from django.core.exceptions import RequestAborted
from django.http import QueryDict
from django.urls import Resolver404, resolve

from observability.http import begin_exchange, finish_exchange

from ..errors import render_exception
from .daphne_write import body_writer
from .relay import write_through
from .stream_views import STREAMING_METHODS

PREFIX = ("/v1/responses", "/v1/chat/completions")  # the stream views' routes
# A stream view's URL without a captured part (`POST /v1/responses`, the chat
# completions) resolved once: Django's resolve walks the URLconf's patterns on every
# call (~25 us). A path's route here is fixed for the process (a URLconf changed at run
# time is not followed); the URLconf's `path()`s give one entry per such route, and a
# few are kept at most.
_resolved: dict = {}
RESOLVED_KEPT = 8


def streaming_route(scope):
    """(async view, resolver match) when a stream view takes this request (its
    StreamingRoute says so); the URL is resolved only for a method a stream view serves,
    and once (a URL without captured parts once per process): the view gets the match,
    Django's handler is not used."""
    path = scope["path"]
    if scope["method"] not in STREAMING_METHODS or not path.startswith(PREFIX):
        return None
    match = _resolved.get(path)
    if match is None:
        try:
            match = resolve(path)
        except Resolver404:
            return None
    route = getattr(match.func, "streaming_route", None)
    if route is None:
        return None
    if not (match.args or match.kwargs) and len(_resolved) < RESOLVED_KEPT:
        _resolved[path] = match
    query = QueryDict(scope["query_string"].decode("latin-1"))
    return (route.view, match) if route.serves(scope["method"], query) else None


def serve_streaming_views(django_app):
    """An ASGI app: the streaming views' requests here, everything else to Django."""

    async def application(scope, receive, send):
        route = streaming_route(scope) if scope["type"] == "http" else None
        if route is None:
            return await django_app(scope, receive, send)
        try:
            body_file = await django_app.read_body(receive)
        except RequestAborted:
            return
        try:
            request = django_app.request_class(scope, body_file)
            request.resolver_match = route[1]
            await _until_disconnected(_respond(django_app, request, *route, send), django_app,
                                      receive)
        finally:
            body_file.close()

    return application


async def _respond(django_app, request, handler, match, send) -> None:
    exchange = begin_exchange(request)
    try:
        request.get_host()  # Django's Host check (DisallowedHost: a JSON 400)
        response = await handler(request, *match.args, **match.kwargs)
    except Exception as exc:
        response = render_exception(exc, request)
    reply = getattr(response, "relay_reply", None)
    if reply is not None and reply.subscription is not None:  # a stream of relay.py's
        write = body_writer(send)
        if write is not None:
            write_through(reply, write)
    await django_app.send_response(finish_exchange(request, response, exchange), send)


async def _until_disconnected(work, django_app, receive) -> None:
    """Run `work`, cancelled if the client leaves first (the views handle that), as
    ASGIHandler.handle does."""
    tasks = [asyncio.ensure_future(django_app.listen_for_disconnect(receive)),
             asyncio.ensure_future(work)]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        if not task.done():
            task.cancel()
        try:
            await task
        except (asyncio.CancelledError, RequestAborted):
            pass
