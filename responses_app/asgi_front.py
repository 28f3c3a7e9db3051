"""The hot path without Django's request handler: `POST /v1/responses` as a plain ASGI app.

Django's ASGI handler gives every request a fresh OS thread (held for the whole stream)
and a thread hop per middleware. This front reads the body, runs authentication,
validation and persistence (the same functions the DRF views use) on a small pool of
long-lived database threads, then relays the bus. Every other request goes to Django.
"""
import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import orjson
from django.conf import settings
from django.db import close_old_connections

from . import relay, services
from .auth import resolve_api_key
from .create_request import NUL_MESSAGE, contains_nul, parse_create_request
from .errors import BodyTooLarge, InvalidRequest, ServerError, as_api_error, error_body

log = logging.getLogger(__name__)

HOT_PATH = "/v1/responses"


def route_hot_paths(django_app):
    """An ASGI app sending `POST /v1/responses` to this front and the rest to Django."""

    async def application(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == HOT_PATH and scope["method"] == "POST":
            await create_response(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return application


async def refuse_websocket(scope, receive, send):
    """No WebSocket transport (yet): the handshake is refused (HTTP 403), never a 500."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})


@lru_cache(maxsize=1)
def _db_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.WEB_DB_THREADS, thread_name_prefix="web-db")


async def run_db(function, *args):
    """Run ORM work on a database thread (connections are returned to the pool after)."""
    return await asyncio.get_running_loop().run_in_executor(_db_threads(), _with_db, function,
                                                             *args)


def _with_db(function, *args):
    try:
        return function(*args)
    finally:
        close_old_connections()


async def create_response(scope, receive, send):
    try:
        body = await _read_body(scope, receive)
        row_id, stream = await run_db(_create, _header(scope, b"authorization"), body)
        reply = await (relay.stream_reply(row_id) if stream else relay.final_reply(row_id))
    except Exception as exc:  # every failure is an OpenAI-shaped JSON error
        reply = _reply_for(exc)
    await send_reply(reply, receive, send)


def _create(authorization, body):
    principal = resolve_api_key(authorization)
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"We could not parse the JSON body of your request: {exc}.",
                             code="invalid_json") from None
    if b"\\u0000" in body and contains_nul(payload):  # Postgres text cannot hold NUL
        raise InvalidRequest(NUL_MESSAGE, code="invalid_value")
    create = parse_create_request(payload)
    return services.response_create(principal.tenant, create).id, create.stream


def _reply_for(exc: Exception) -> relay.Reply:
    api_error = as_api_error(exc)
    if api_error is None:
        log.exception("unhandled error on POST %s", HOT_PATH)
        api_error = ServerError("The server had an error while processing your request.")
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
    finally:
        watcher.cancel()
        await reply.stream.aclose()
