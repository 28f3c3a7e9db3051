"""The WebSocket front door of /v1/responses (OpenAI's WebSocket mode): a Channels consumer
on the web process, routed in gateway/asgi.py.

The handshake's `Authorization: Bearer` header authenticates the socket with the same API
keys as HTTP; each `response.create` frame is then admitted (rate limits, quotas), counted
and logged as a request of its own, with its own request id (socket_turn.py). Responses of
one stream (`stream_id`, or the default) run one after another, in the order their frames
arrived (FIFO), streams side by side (socket_lanes.py); frames waiting are bounded
(WEBSOCKET_MAX_QUEUED a stream, WEBSOCKET_MAX_STREAMS streams). Bad frames get an `error`
frame and the socket stays usable; an unknown or revoked key and an exhausted quota close
it after the error frame (close codes 4401 and 4429), the database unreachable when the
handshake's key is looked up with 4503. A socket lives at most
WEBSOCKET_MAX_AGE_SECONDS (then `websocket_connection_limit_reached`) and is closed after
WEBSOCKET_IDLE_SECONDS without a frame or a running response; Daphne pings it meanwhile
(its --ping-interval). A socket that closes stops its running `store: false` responses
(nobody can read the rest); `store: true` ones go on and are stored. A server that stops
closes its sockets with 4503 first (socket_shutdown.py).
"""
import asyncio
import logging

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.consumer import get_handler_name
from django.conf import settings

from accounting.ratelimit import QuotaExceeded

from ..auth import resolve_api_key
from ..db_threads import run_db
from ..errors import APIError, AuthenticationError, BodyTooLarge, InvalidRequest
from . import framing, socket_shutdown, streaming
from .daphne_write import frame_writer
from .parsers import parse_json
from .socket_lanes import Lane, steered_lane
from .socket_state import SocketState
from .socket_steer import SteerEvents, SteerRefused, accept, check_steer

log = logging.getLogger(__name__)

# Close codes: 1000, or 4000 + the HTTP status of the reason (a server may send 1000 or
# 3000-4999 only; RFC 6455's 1008 and 1001 are not for applications to send).
NORMAL_CLOSURE = 1000  # the socket's age limit or idle timeout
BAD_KEY = 4401  # an unknown or revoked API key
OVER_QUOTA = 4429  # the tenant's token budget is spent


class ResponsesSocket(AsyncWebsocketConsumer):
    async def dispatch(self, message):
        """Channels' dispatch without its per-message hop to a thread to close old database
        connections: nothing on this loop uses the ORM (database work goes to db_threads)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self):
        headers = dict(self.scope.get("headers") or ())
        self.authorization = (headers.get(b"authorization") or b"").decode("latin-1") or None
        self.lanes: dict[str | None, Lane] = {}
        self.timer, self.closing = None, False
        self.steer_events = SteerEvents()
        self.frame_writer = frame_writer(self.base_send)  # under Daphne (socket_turn.py)
        await self.accept()
        try:
            principal = await run_db(resolve_api_key, self.authorization)
        except APIError as exc:  # a bad key (4401), or the database unreachable (4503)
            await self.send_error(exc)
            await self.end(BAD_KEY if isinstance(exc, AuthenticationError)
                           else 4000 + exc.status)
            return
        self.state = SocketState(principal.tenant.id)
        socket_shutdown.OPEN.add(self)
        loop = asyncio.get_running_loop()
        self.deadline = loop.time() + settings.WEBSOCKET_MAX_AGE_SECONDS
        self.last_active = loop.time()
        self.timer = asyncio.ensure_future(self._watch_limits())

    async def receive(self, text_data=None, bytes_data=None):
        if self.closing or self.timer is None:
            return
        self.last_active = asyncio.get_running_loop().time()
        try:
            frame = self._frame(text_data if text_data is not None else bytes_data)
        except APIError as exc:
            await self.send_error(exc)
            return
        if frame["type"] == "response.steer":
            await self._steer(frame)
            return
        stream_id = frame.get("stream_id")
        lane = self.lanes.get(stream_id)
        if lane is None:
            if len(self.lanes) >= settings.WEBSOCKET_MAX_STREAMS:
                await self.send_error(InvalidRequest(
                    f"Too many streams on this socket (at most "
                    f"{settings.WEBSOCKET_MAX_STREAMS} stream_id values).",
                    param="stream_id", code="too_many_streams"))
                return
            lane = self.lanes[stream_id] = Lane(self, stream_id)
        if not lane.offer(frame):
            await self.send_error(InvalidRequest(
                f"Too many response.create events waiting on this stream (at most "
                f"{settings.WEBSOCKET_MAX_QUEUED}); wait for a response to end.",
                code="too_many_queued_requests"))

    def _frame(self, data) -> dict:
        """A client event: a `response.create` frame as a dict, or an APIError."""
        if _size(data) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            raise BodyTooLarge("The event is larger than this server accepts.")
        frame = parse_json(data, "of your event")
        if not isinstance(frame, dict):
            raise InvalidRequest("An event must be a JSON object.", code="invalid_type")
        kind = frame.get("type")
        if kind == "response.steer":
            return frame
        if kind != "response.create":
            raise InvalidRequest(f"Unsupported event type {kind!r}: this server accepts "
                                 "'response.create' and 'response.steer'.", param="type",
                                 code="invalid_value")
        stream_id = frame.get("stream_id")
        if stream_id is not None and (not isinstance(stream_id, str) or not stream_id):
            raise InvalidRequest("'stream_id' must be a non-empty string.", param="stream_id",
                                 code="invalid_type")
        return frame

    async def _steer(self, frame: dict) -> None:
        """A `response.steer`: queued on the running response it names, which the first
        one stops (it ends `incomplete`, `steered`; socket_steer.py)."""
        try:
            target, steered = check_steer(frame)
            lane = steered_lane(self.lanes, self.state, target)
            steer = accept(target, steered, len(lane.turn.steers))
        except SteerRefused as exc:
            await self.send_text(self.steer_events.failed(
                frame.get("previous_response_id"), frame.get("input"), None, exc.code,
                exc.message))
            return
        lane.turn.steers.append(steer)
        await self.send_text(self.steer_events.accepted(steer, lane.stream_id))
        if len(lane.turn.steers) == 1:
            await streaming.steer_running(target)

    async def _watch_limits(self) -> None:
        """Close the socket at its age limit, or when idle too long."""
        loop = asyncio.get_running_loop()
        while not self.closing:
            now = loop.time()
            busy = any(lane.busy for lane in self.lanes.values())
            if now >= self.deadline and not busy:
                await self.send_error(InvalidRequest(
                    "Responses websocket connection limit reached "
                    f"({settings.WEBSOCKET_MAX_AGE_SECONDS:g} seconds). Create a "
                    "new websocket connection to continue.",
                    code="websocket_connection_limit_reached"))
                await self.end(NORMAL_CLOSURE)
                return
            idle_until = self.last_active + settings.WEBSOCKET_IDLE_SECONDS
            if not busy and now >= idle_until:
                await self.end(NORMAL_CLOSURE)
                return
            # Wake at the next limit; while busy, look again one idle timeout later (the
            # socket may be idle from the end of its response). A frame moves
            # `last_active` meanwhile: waking early only means looking again.
            wake = min(self.deadline, now + settings.WEBSOCKET_IDLE_SECONDS if busy
                       else idle_until)
            await asyncio.sleep(max(0.05, wake - now))

    async def refused(self, exc: APIError) -> None:
        """A turn's error: an unusable key or an exhausted quota closes the socket."""
        if isinstance(exc, AuthenticationError):
            await self.end(BAD_KEY)
        elif isinstance(exc, QuotaExceeded):
            await self.end(OVER_QUOTA)

    async def send_text(self, text: str) -> None:
        if not self.closing:
            await self.send(text_data=text)

    async def send_error(self, exc: APIError) -> None:
        """An error as OpenAI's WebSocket `error` event (framing.websocket_error)."""
        await self.send_text(framing.websocket_error(exc).decode())

    async def end(self, code: int) -> None:
        if not self.closing:
            self.closing = True
            await self.close(code)

    async def shut_down(self, code: int) -> None:
        """The server is stopping: close with `code`, stop the unstored runs."""
        await self.end(code)
        await self.disconnect(code)

    async def disconnect(self, code):
        self.closing = True
        socket_shutdown.OPEN.discard(self)
        if self.timer is not None and not self.timer.done():
            self.timer.cancel()
        for lane in self.lanes.values():
            await lane.stop()


async def refuse_websocket(scope, receive, send):
    """Any other WebSocket path: the handshake is refused (HTTP 403)."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close"})


def websocket_application():
    """The ASGI app of every WebSocket: /v1/responses is WebSocket mode, others are refused."""
    responses_socket = ResponsesSocket.as_asgi()
    socket_shutdown.install()

    async def application(scope, receive, send):
        if scope["path"].rstrip("/") == "/v1/responses":
            return await responses_socket(scope, receive, send)
        return await refuse_websocket(scope, receive, send)

    return application


def _size(data: str | bytes) -> int:
    """A message's size in bytes, as the HTTP body limit counts it (a text frame's UTF-8
    takes 1 to 4 bytes a character: encoded only when that decides)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if isinstance(data, bytes) or len(data) > limit or 4 * len(data) <= limit:
        return len(data)
    return len(data.encode("utf-8", "surrogatepass"))
