"""The streaming paths without Django's request handler, as a plain ASGI app:
`POST /v1/responses` and `GET /v1/responses/{id}?stream=true` (resume).

Django's ASGI handler gives every request a fresh OS thread (held for the whole stream)
and a thread hop per middleware. This front reads the body and runs authentication,
validation and persistence (the same functions the DRF views use), then relays the bus.
What reads the database runs on a small pool of long-lived database threads; a request
whose key and limits are remembered and that reads nothing stored (no chain, no
conversation, no MCP tools) is checked on the event loop, and its row is written from
there too (loop_rows.py) while its run is sent. Every other request goes to Django.
"""
import asyncio
import logging
import re
import time
from functools import lru_cache
from urllib.parse import parse_qs

import orjson
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from accounting import ratelimit
from observability.http import Exchange
from observability.request_context import HEADER as REQUEST_ID_HEADER
from observability.request_context import bind_request_id

from . import relay, services
from .auth import remembered_principal, resolve_api_key
from .bus import event_bus
from .cancellation import cancellation
from .create_request import NUL_MESSAGE, contains_nul, parse_create_request
from .db_threads import run_db
from .errors import (
    BodyTooLarge,
    InvalidRequest,
    NotFound,
    ServerError,
    as_api_error,
    error_body,
)
from .models import TERMINAL_STATUSES, StoredResponse

log = logging.getLogger(__name__)

HOT_PATH = "/v1/responses"
HOT_ROUTE = "v1/responses"  # its route label in metrics, as Django names its URL pattern
RESPONSE_PATH = re.compile(r"^/v1/responses/([^/\x00]+)$")  # as the `id` path converter
RESPONSE_ROUTE = "v1/responses/<id:response_id>"
# A run that ended this recently may not have published its end yet: follow, don't refuse.
JUST_ENDED_SECONDS = 10


def route_hot_paths(django_app):
    """An ASGI app sending the streaming paths to this front and the rest to Django."""

    async def application(scope, receive, send):
        if scope["type"] == "http":
            if scope["path"] == HOT_PATH and scope["method"] == "POST":
                return await _unless_bad_host(create_response, scope, receive, send)
            if scope["method"] == "GET" and b"stream=" in scope["query_string"]:
                match = RESPONSE_PATH.match(scope["path"])
                query = parse_qs(scope["query_string"].decode("latin-1"))
                if match and query.get("stream", [""])[-1].lower() == "true":
                    return await _unless_bad_host(resume_response, scope, receive, send,
                                                  match[1], query)
        await django_app(scope, receive, send)

    return application


async def _unless_bad_host(handler, scope, receive, send, *args):
    """ALLOWED_HOSTS holds here too (Django checks it for every other route)."""
    if _host_allowed(_header(scope, b"host")):
        return await handler(scope, receive, send, *args)
    await send_reply(_reply_for(InvalidRequest("Bad request (check the Host header).",
                                               code="bad_request")), receive, send)


@lru_cache(maxsize=256)
def _host_allowed(host: str | None) -> bool:
    if host is None:  # HTTP/1.0 without Host: Django falls back to the server's name
        return True
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


async def refuse_websocket(scope, receive, send):
    """No WebSocket transport (yet): the handshake is refused (HTTP 403), never a 500."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})


async def create_response(scope, receive, send):
    exchange = Exchange("POST", _header(scope, REQUEST_ID_HEADER.encode()))
    try:
        body = await _read_body(scope, receive)
        row, create, subscription = await _create(_header(scope, b"authorization"), body,
                                                  exchange)
        if create.background:
            reply = (relay.resume_reply(subscription) if create.stream
                     else relay.json_reply(200, row.resource))
        elif create.stream:
            reply = await relay.stream_reply(subscription)
        else:
            reply = await _unless_disconnected(relay.final_reply(subscription), receive)
            if reply is None:  # the client left while the run went on
                if not create.store:
                    await _cancel(row.id)
                exchange.answered(HOT_ROUTE, HOT_PATH, 499)  # nginx's "client closed"
                return
        if not create.store:
            reply.on_disconnect = lambda: _cancel(row.id)
    except Exception as exc:  # every failure is an OpenAI-shaped JSON error
        reply = _reply_for(exc)
    await _answer(reply, exchange, HOT_ROUTE, HOT_PATH, receive, send)


async def _answer(reply: relay.Reply, exchange, route: str, path: str, receive, send) -> None:
    """Send the reply with the exchange's headers (request id, rate limits); count it."""
    reply.headers = [*reply.headers, *((k.encode(), v.encode())
                                       for k, v in exchange.headers.items())]
    try:
        await send_reply(reply, receive, send)
    finally:
        exchange.answered(route, path, reply.status)


async def _create(authorization, body, exchange):
    """Admit, validate and create the response: its row, its run sent, and (unless it is a
    plain background response) its events subscribed to before the run can publish any."""
    if _admits_without_io(authorization):
        principal, admission = _admit(authorization, body, exchange)
    else:
        principal, admission = await run_db(_admit, authorization, body, exchange)
    subscription = None
    try:
        create = _parse(body)
        context = {"request_id": exchange.request_id, **admission.run_context()}
        if services.needs_lookups(create):
            new = await run_db(_prepare, principal.tenant, create, context)
        else:
            new = services.response_prepare(principal.tenant, create, context)
        if create.stream or not create.background:
            subscription = await event_bus().subscribe(new.row.id)
        await services.response_start(new)
    except BaseException:
        if subscription is not None:
            subscription.close()
        if admission.limited:  # no run will settle it
            await run_db(ratelimit.cancel, admission)
        raise
    return new.row, create, subscription


def _admits_without_io(authorization) -> bool:
    """A key accepted lately, of a tenant without limits: admitting it reads nothing."""
    principal = remembered_principal(authorization)
    return principal is not None and ratelimit.admits_without_io(principal)


def _admit(authorization, body, exchange):
    """The caller and its admission (on a database thread unless it reads nothing)."""
    bind_request_id(exchange.request_id)  # this thread logs for this request
    principal = resolve_api_key(authorization)
    admission = ratelimit.admit(principal, tokens=ratelimit.estimate_tokens(body), run=True)
    exchange.headers.update(admission.headers)
    return principal, admission


def _parse(body: bytes):
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"We could not parse the JSON body of your request: {exc}.",
                             code="invalid_json") from None
    if b"\\u0000" in body and contains_nul(payload):  # Postgres text cannot hold NUL
        raise InvalidRequest(NUL_MESSAGE, code="invalid_value")
    return parse_create_request(payload)


def _prepare(tenant, create, context):
    bind_request_id(context["request_id"])
    return services.response_prepare(tenant, create, context)


async def _cancel(response_id: str) -> None:
    """A store=false run whose client left: nobody can ever read the rest, so stop it."""
    try:
        await run_db(cancellation().request_cancel, response_id)
    except Exception as exc:
        log.warning("could not cancel abandoned run %s: %s", response_id, exc)


async def _unless_disconnected(awaitable, receive):
    """The result of `awaitable`, or None if the client disconnects first."""
    work = asyncio.ensure_future(awaitable)

    async def disconnected():
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if work.done():
        return work.result()
    work.cancel()
    return None


async def resume_response(scope, receive, send, response_id: str, query: dict):
    """`GET /v1/responses/{id}?stream=true[&starting_after=N]`: replay, then follow."""
    exchange = Exchange("GET", _header(scope, REQUEST_ID_HEADER.encode()))
    try:
        after = _starting_after(query)
        status, completed_at = await run_db(_resume_check, _header(scope, b"authorization"),
                                            response_id, exchange)
        just_ended = min(JUST_ENDED_SECONDS, settings.EVENT_RETENTION_SECONDS / 2)
        ended_long_ago = (status in TERMINAL_STATUSES
                          and time.time() - completed_at > just_ended)
        if ended_long_ago and not await event_bus().retained(response_id):
            raise NotFound(
                f"The event stream of response '{response_id}' is no longer retained (events "
                f"are kept {settings.EVENT_RETENTION_SECONDS} s after a response ends); "
                "retrieve the response without stream=true.", code="event_stream_expired")
        reply = relay.resume_reply(await event_bus().subscribe(response_id, after))
    except Exception as exc:
        reply = _reply_for(exc)
    await _answer(reply, exchange, RESPONSE_ROUTE, scope["path"], receive, send)


def _starting_after(query: dict) -> int:
    value = query.get("starting_after", ["-1"])[-1]
    try:
        after = int(value)
    except ValueError:
        after = -2
    if after < -1:
        raise InvalidRequest("'starting_after' must be a sequence number (an integer >= 0).",
                             param="starting_after", code="invalid_value")
    return after


def _resume_check(authorization, response_id: str, exchange) -> tuple[str, float]:
    bind_request_id(exchange.request_id)
    principal = resolve_api_key(authorization)
    exchange.headers.update(ratelimit.admit(principal).headers)
    row = (StoredResponse.objects.filter(id=response_id, tenant=principal.tenant, store=True)
           .only("status", "completed_at", "created_at").first())
    if row is None:
        raise NotFound(f"No response found with id '{response_id}'.")
    ended = row.completed_at or row.created_at
    return row.status, ended.timestamp()


def _reply_for(exc: Exception) -> relay.Reply:
    api_error = as_api_error(exc)
    if api_error is None:
        log.exception("unhandled error on a streaming path")
        api_error = ServerError("The server had an error while processing your request.")
    elif api_error.status == 503:  # an outage, or an overload: say which
        log.warning("answered 503 (%s): %r", api_error.message, exc)
    headers = dict(api_error.headers)
    if api_error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return relay.json_reply(api_error.status, error_body(
        api_error.message, api_error.type, api_error.param, api_error.code), headers)


def _header(scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _read_body(scope, receive) -> bytes:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    declared = _header(scope, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge("The request body is larger than this server accepts.")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise asyncio.CancelledError()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge("The request body is larger than this server accepts.")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def send_reply(reply: relay.Reply, receive, send) -> None:
    """Send a Reply; a stream stops (and its subscription closes) if the client goes."""
    await send({"type": "http.response.start", "status": reply.status, "headers": reply.headers})
    if reply.stream is None:
        await send({"type": "http.response.body", "body": reply.body})
        return
    sender = asyncio.current_task()
    disconnected = False

    async def watch_disconnect():
        nonlocal disconnected
        while (await receive())["type"] != "http.disconnect":
            pass
        disconnected = True
        sender.cancel()

    watcher = asyncio.ensure_future(watch_disconnect())
    try:
        async for chunk in reply.stream:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    except asyncio.CancelledError:
        if not disconnected:
            raise
        if reply.on_disconnect is not None:
            await reply.on_disconnect()
    finally:
        watcher.cancel()
        await reply.stream.aclose()
